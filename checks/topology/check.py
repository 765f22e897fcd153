"""The `topology` check: sources → parse + NVML view → judge → result."""

from __future__ import annotations

from sitscheck.check import LazyCheck, MetricSpec
from sitscheck.status import Layer


class TopologyCheck(LazyCheck):
    name = "topology"
    summary = "GPU pairs on NVLink, NICs and CPUs near each GPU; topo -m cross-checked with NVML"
    layer = Layer.HARDWARE
    needs_gpu = True
    metrics = (
        MetricSpec("sitscheck.topology.gpus", "{gpu}", "GPUs in the topology"),
        MetricSpec("sitscheck.topology.nvlink_pairs", "{pair}", "GPU pairs joined by NVLink"),
        MetricSpec("sitscheck.topology.pcie_only_pairs", "{pair}", "GPU pairs joined only by PCIe"),
    )
    impl = "sitscheck.checks.topology.impl:TopologyImpl"
