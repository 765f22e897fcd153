"""The `memory_errors` check: GPU views (ECC, row remapping, retired pages) → judge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitscheck.check import CheckContext, CheckOutput, MetricSpec
from sitscheck.status import Layer

if TYPE_CHECKING:
    from sitscheck.config import RunConfig
    from sitscheck.sources.base import Sources


class MemoryErrorsCheck:
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

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        from sitscheck import gpu_view

        return gpu_view.skip_unless_driver(sources)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        from sitscheck import gpu_view

        from .judge import judge

        return gpu_view.collect_with(ctx.sources, judge)
