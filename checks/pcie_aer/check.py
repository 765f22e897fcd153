"""The `pcie_aer` check: kernel log + sysfs counters → events per GPU path."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitscheck.check import MetricSpec
from sitscheck.status import Layer

if TYPE_CHECKING:
    from sitscheck.check import CheckContext, CheckOutput
    from sitscheck.config import RunConfig
    from sitscheck.sources.base import Sources


class PcieAerCheck:
    name = "pcie_aer"
    summary = "PCIe AER errors in the kernel log and sysfs counters, per GPU path"
    layer = Layer.HARDWARE
    needs_gpu = False
    metrics = (
        MetricSpec("hw.errors", "{error}", "AER errors counted in sysfs, by device and severity"),
        MetricSpec("sitscheck.pcie.aer.events", "{event}", "AER reports in the kernel log"),
    )

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        from .impl import PcieAerImpl

        return PcieAerImpl().applicable(sources, config)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        from .impl import PcieAerImpl

        return PcieAerImpl().collect(ctx)
