"""The `driver` check: sources → inventory → findings."""

from __future__ import annotations

from sitscheck.contract import Anchor, EvidenceSpec, KernelLogInterest, LazyCheck, MetricSpec
from sitscheck.sources.artifacts import GPU_IDENTITY_KEYS, GPU_VIEW_COMMANDS
from sitscheck.status import Layer

from .kernel import MISMATCH, MODULE


class DriverCheck(LazyCheck):
    name = "driver"
    summary = "the NVIDIA driver answers and lists every expected GPU; versions agree"
    layer = Layer.DRIVER
    needs_gpu = True
    metrics: tuple[MetricSpec, ...] = (
        MetricSpec("sitscheck.gpu.number", "{gpu}", "GPUs the driver lists"),
    )
    codes = "sitscheck.checks.driver.codes:CODES"
    facts = "sitscheck.checks.driver.facts:Facts"
    evidence = EvidenceSpec(
        summary=(
            "every GPU's identity, versions and modes from all the evidence there is, joined by "
            "bus id / UUID with each value's source: NVML (name, UUID, PCI bus and device id, "
            "VBIOS, persistence mode, recovery action), nvidia-smi -L, --query-gpu CSV and -q; "
            "the driver probe (/proc/driver/nvidia/version, /dev/nvidiactl); the NVIDIA GPUs on "
            "the PCI bus (sysfs vendor and class) and the kernel's NVRM API-mismatch report, "
            "where no source lists a GPU"
        ),
        commands=GPU_VIEW_COMMANDS,
        nvml=(*GPU_IDENTITY_KEYS, "unavailable", "failures"),
        sysfs_paths=("sitscheck.sources.pci:gpu_path_files",),
        kernel_log=True,
    )
    kernel_log = KernelLogInterest(
        anchors=(Anchor(MISMATCH.encode()), Anchor(MODULE.encode())),
        handler="sitscheck.checks.driver.kernel:MismatchLines",
    )
    impl = "sitscheck.checks.driver.impl:DriverImpl"
