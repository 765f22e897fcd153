"""The `pcie_link` check: GPU views + sysfs link files → judge."""

from __future__ import annotations

from sitscheck.check import LazyCheck, MetricSpec
from sitscheck.status import Layer


class PcieLinkCheck(LazyCheck):
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
    impl = "sitscheck.checks.pcie_link.impl:PcieLinkImpl"
