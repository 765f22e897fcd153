"""The `memory_errors` check: GPU views (ECC, row remapping, retired pages) → judge."""

from __future__ import annotations

from sitscheck.check import LazyCheck, MetricSpec
from sitscheck.status import Layer


class MemoryErrorsCheck(LazyCheck):
    name = "memory_errors"
    summary = "ECC errors, row remapping (pending, failed) and retired pages per GPU"
    layer = Layer.HARDWARE
    needs_gpu = True
    metrics = (
        MetricSpec("hw.errors", "{error}", "ECC errors (error.type, ecc.scope)"),
        MetricSpec("sitscheck.gpu.memory.remapped_rows", "{row}", "rows remapped, by kind"),
        MetricSpec("sitscheck.gpu.memory.remap_pending", "1", "1 when a remap awaits a reset"),
        MetricSpec("sitscheck.gpu.memory.remap_failure", "1", "1 when a remap failed"),
        MetricSpec("sitscheck.gpu.memory.retired_pages", "{page}", "retired pages, by cause"),
    )
    impl = "sitscheck.checks.memory_errors.judge:WORK"
