"""The `memory_errors` check: GPU views (ECC, row remapping, retired pages) → judge."""

from __future__ import annotations

from sitscheck.contract import EvidenceSpec, LazyCheck, MetricKind, MetricSpec
from sitscheck.sources.artifacts import GPU_VIEW_COMMANDS
from sitscheck.status import Layer


class MemoryErrorsCheck(LazyCheck):
    name = "memory_errors"
    summary = "ECC errors, row remapping (pending, failed) and retired pages per GPU"
    layer = Layer.HARDWARE
    needs_gpu = True
    metrics = (
        MetricSpec("hw.errors", "{error}", "ECC errors (error.type, ecc.scope)"),
        MetricSpec(
            "sitscheck.gpu.memory.remapped_rows",
            "{row}",
            "rows remapped, by kind",
            MetricKind.COUNTER,
        ),
        MetricSpec("sitscheck.gpu.memory.remap_pending", "1", "1 when a remap awaits a reset"),
        MetricSpec("sitscheck.gpu.memory.remap_failure", "1", "1 when a remap failed"),
        MetricSpec(
            "sitscheck.gpu.memory.retired_pages",
            "{page}",
            "retired pages, by cause",
            MetricKind.COUNTER,
        ),
    )
    codes = "sitscheck.checks.memory_errors.codes:CODES"
    facts = "sitscheck.checks.memory_errors.facts:Facts"
    evidence = EvidenceSpec(
        summary=(
            "NVML ECC counters (volatile and aggregate, corrected and uncorrected), row remapper "
            "(rows remapped, pending, failure, bank histogram), retired pages"
        ),
        commands=GPU_VIEW_COMMANDS,
        nvml=("ecc", "remap", "retired_pages"),
    )
    impl = "sitscheck.checks.memory_errors.judge:WORK"
