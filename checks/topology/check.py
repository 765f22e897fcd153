"""The `topology` check: sources → parse + NVML view → judge → result."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitscheck.check import MetricSpec
from sitscheck.status import Layer

if TYPE_CHECKING:
    from sitscheck.check import CheckContext, CheckOutput
    from sitscheck.config import RunConfig
    from sitscheck.sources.base import Sources


class TopologyCheck:
    name = "topology"
    summary = "GPU pairs on NVLink, NICs and CPUs near each GPU; topo -m cross-checked with NVML"
    layer = Layer.HARDWARE
    needs_gpu = True
    metrics = (
        MetricSpec("sitscheck.topology.gpus", "{gpu}", "GPUs in the topology"),
        MetricSpec("sitscheck.topology.nvlink_pairs", "{pair}", "GPU pairs joined by NVLink"),
        MetricSpec("sitscheck.topology.pcie_only_pairs", "{pair}", "GPU pairs joined only by PCIe"),
    )

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        from .impl import TopologyImpl

        return TopologyImpl().applicable(sources, config)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        from .impl import TopologyImpl

        return TopologyImpl().collect(ctx)
