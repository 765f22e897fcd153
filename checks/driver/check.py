"""The `driver` check: sources → inventory → findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitscheck.check import MetricSpec
from sitscheck.status import Layer

if TYPE_CHECKING:
    from sitscheck.check import CheckContext, CheckOutput
    from sitscheck.config import RunConfig
    from sitscheck.sources.base import Sources


class DriverCheck:
    name = "driver"
    summary = "the NVIDIA driver answers and lists every expected GPU; versions agree"
    layer = Layer.DRIVER
    needs_gpu = True
    metrics: tuple[MetricSpec, ...] = (
        MetricSpec("sitscheck.gpu.count", "{gpu}", "GPUs the driver lists"),
    )

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        from .impl import DriverImpl

        return DriverImpl().applicable(sources, config)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        from .impl import DriverImpl

        return DriverImpl().collect(ctx)
