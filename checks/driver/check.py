"""The `driver` check: sources → inventory → findings."""

from __future__ import annotations

from sitscheck.contract import EvidenceSpec, LazyCheck, MetricSpec
from sitscheck.sources.artifacts import GPU_IDENTITY_KEYS, GPU_VIEW_COMMANDS
from sitscheck.status import Layer


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
            "the driver probe (/proc/driver/nvidia/version, /dev/nvidiactl)"
        ),
        commands=GPU_VIEW_COMMANDS,
        nvml=(*GPU_IDENTITY_KEYS, "unavailable", "failures"),
    )
    impl = "sitscheck.checks.driver.impl:DriverImpl"
