"""The named pieces of raw evidence a node yields, and the commands that produce them live.

One table serves both directions: a live run runs the command, `sitscheck collect` writes its
output under the name, and a replay reads the file of that name from the bundle. An operator
can assemble a bundle by hand by saving these commands' outputs under these names.
"""

from __future__ import annotations

from dataclasses import dataclass

# Fields asked of `nvidia-smi --query-gpu` when NVML cannot be used; parsed by header name, so
# any subset or order an operator saves by hand is read as well.
QUERY_GPU_FIELDS = (
    "index,name,pci.bus_id,uuid,driver_version,vbios_version,persistence_mode,"
    "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,"
    "utilization.gpu,utilization.memory,power.draw,power.limit,enforced.power.limit,"
    "clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,clocks_event_reasons.active,"
    "temperature.gpu,temperature.memory,ecc.errors.corrected.volatile.total,"
    "ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.aggregate.total,"
    "ecc.errors.uncorrected.aggregate.total"
)


@dataclass(frozen=True, slots=True)
class ArtifactSpec:
    name: str
    argv: tuple[str, ...]
    summary: str


NVIDIA_SMI_L = "nvidia-smi-L.txt"
NVIDIA_SMI_Q = "nvidia-smi-q.txt"
NVIDIA_SMI_TOPO = "nvidia-smi-topo-m.txt"
NVIDIA_SMI_DMON = "nvidia-smi-dmon.txt"
NVIDIA_SMI_QUERY_GPU = "nvidia-smi-query-gpu.csv"
DMESG = "dmesg.txt"
NVML_JSON = "nvml.json"
META_JSON = "meta.json"
SYSFS_DIR = "sysfs"
TENSORRT_DIR = "tensorrt"

COMMAND_ARTIFACTS: dict[str, ArtifactSpec] = {
    spec.name: spec
    for spec in (
        ArtifactSpec(NVIDIA_SMI_L, ("nvidia-smi", "-L"), "GPUs the driver lists"),
        ArtifactSpec(NVIDIA_SMI_Q, ("nvidia-smi", "-q"), "full per-GPU query"),
        ArtifactSpec(NVIDIA_SMI_TOPO, ("nvidia-smi", "topo", "-m"), "GPU/NIC topology matrix"),
        ArtifactSpec(
            NVIDIA_SMI_QUERY_GPU,
            ("nvidia-smi", f"--query-gpu={QUERY_GPU_FIELDS}", "--format=csv"),
            "one CSV sample of every GPU",
        ),
        ArtifactSpec(
            NVIDIA_SMI_DMON,
            ("nvidia-smi", "dmon", "-s", "pucvmet", "-c", "1"),
            "one dmon sample (utilization, power, clocks, violations, memory, ECC, PCIe)",
        ),
    )
}
