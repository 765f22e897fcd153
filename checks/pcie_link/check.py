"""The `pcie_link` check: GPU views + sysfs link files → judge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitscheck.check import MetricSpec
from sitscheck.status import Layer

if TYPE_CHECKING:
    from sitscheck.check import CheckContext, CheckOutput
    from sitscheck.config import RunConfig
    from sitscheck.sources.base import Sources


class PcieLinkCheck:
    name = "pcie_link"
    summary = "every GPU's PCIe link at full width (and, while busy, full speed); replay rate"
    layer = Layer.HARDWARE
    needs_gpu = True
    metrics = (
        MetricSpec("sitscheck.pcie.link.width", "{lane}", "PCIe link width, current and max"),
        MetricSpec("sitscheck.pcie.link.generation", "{generation}", "PCIe generation"),
        MetricSpec("hw.errors", "{error}", "PCIe replay counter total (error.type=pcie_replay)"),
        MetricSpec("sitscheck.pcie.replay.rate", "{replay}/min", "replays per minute in the run"),
        MetricSpec("hw.gpu.io", "By/s", "PCIe throughput by direction, per stat"),
    )

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        from .impl import PcieLinkImpl

        return PcieLinkImpl().applicable(sources, config)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        from .impl import PcieLinkImpl

        return PcieLinkImpl().collect(ctx)
