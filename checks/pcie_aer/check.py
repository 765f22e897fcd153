"""The `pcie_aer` check: kernel log + sysfs counters → events per GPU path."""

from __future__ import annotations

from sitscheck.check import LazyCheck, MetricSpec
from sitscheck.status import Layer


class PcieAerCheck(LazyCheck):
    name = "pcie_aer"
    summary = "PCIe AER errors in the kernel log and sysfs counters, per GPU path"
    layer = Layer.HARDWARE
    needs_gpu = False
    metrics = (
        MetricSpec("hw.errors", "{error}", "AER errors counted in sysfs, by device and severity"),
        MetricSpec("sitscheck.pcie.aer.events", "{event}", "AER reports in the kernel log"),
    )
    impl = "sitscheck.checks.pcie_aer.impl:PcieAerImpl"
