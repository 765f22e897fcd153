"""The `pcie_link` check: GPU views + sysfs link files → judge."""

from __future__ import annotations

from sitscheck.contract import EvidenceSpec, LazyCheck, MetricSpec, ProfileKey
from sitscheck.sources.artifacts import GPU_VIEW_COMMANDS
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
        MetricSpec("sitscheck.pcie.replay.rate", "{replay}/s", "replays per second in the run"),
        MetricSpec("hw.gpu.io", "By/s", "PCIe throughput by direction, per stat"),
    )
    codes = "sitscheck.checks.pcie_link.codes:CODES"
    facts = "sitscheck.checks.pcie_link.facts:Facts"
    profile_keys = (
        ProfileKey("pcie.gen", "integer", "PCIe generation the GPU's link should run at"),
        ProfileKey("pcie.width", "integer", "PCIe lanes the GPU's link should have (16)"),
    )
    evidence = EvidenceSpec(
        summary=(
            "NVML link width/generation (current and max), sysfs current/max_link_width/speed of "
            "the GPU and every port on its path, the PCIe replay counter at both ends of the "
            "sampling window, PCIe TX/RX throughput"
        ),
        commands=GPU_VIEW_COMMANDS,
        nvml=("pcie", "samples", "counters_s"),
        sysfs_paths=("sitscheck.sources.pci:gpu_path_files",),
    )
    impl = "sitscheck.checks.pcie_link.impl:PcieLinkImpl"
