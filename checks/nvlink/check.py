"""The `nvlink` check: GPU views (per-link state and error counters) → judge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitscheck.check import CheckContext, CheckOutput, MetricSpec
from sitscheck.status import Layer

if TYPE_CHECKING:
    from sitscheck.config import RunConfig
    from sitscheck.sources.base import Sources


class NvlinkCheck:
    name = "nvlink"
    summary = "every NVLink active; replay/recovery/CRC counters not growing"
    layer = Layer.HARDWARE
    needs_gpu = True
    metrics = (
        MetricSpec("sitscheck.nvlink.links", "{link}", "NVLinks by state (active, inactive)"),
        MetricSpec("hw.errors", "{error}", "NVLink error counter totals (error.type)"),
    )

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        from sitscheck import gpu_view

        return gpu_view.skip_unless_driver(sources)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        from sitscheck import gpu_view

        from .judge import judge

        return gpu_view.collect_with(ctx.sources, judge)
