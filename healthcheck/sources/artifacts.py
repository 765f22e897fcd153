"""The named pieces of raw evidence a node yields, and the commands that produce them live.

A check declares the commands it reads (`CommandSpec`, in its `evidence`); one declaration
serves both directions: a live run runs the command, `sitscheck collect` writes its output
under the name, and a replay reads the file of that name from the bundle. An operator can
assemble a bundle by hand by saving these commands' outputs under these names.
"""

from __future__ import annotations

from ..contract.declarations import CommandSpec

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


NVIDIA_SMI_L = "nvidia-smi-L.txt"
NVIDIA_SMI_Q = "nvidia-smi-q.txt"
NVIDIA_SMI_TOPO = "nvidia-smi-topo-m.txt"
NVIDIA_SMI_DMON = "nvidia-smi-dmon.txt"
NVIDIA_SMI_QUERY_GPU = "nvidia-smi-query-gpu.csv"
DMESG = "dmesg.txt"
NVML_JSON = "nvml.json"
# the bandwidth workload's record (`probes.bandwidth`, started by `workloads.bandwidth`), its format
BANDWIDTH_JSON = "bandwidth.json"
BANDWIDTH_FORMAT = "sitscheck-bandwidth"
META_JSON = "meta.json"
SYSFS_DIR = "sysfs"
# The declared sysfs files read again at the end of collect's sampling window (counters are
# differenced over it): the same relative paths under `sysfs-end/`, and the seconds between
# the two readings in `sysfs-end/window_seconds` (one number). `sysfs/` is the first reading.
SYSFS_END_DIR = "sysfs-end"
SYSFS_WINDOW = f"{SYSFS_END_DIR}/window_seconds"
PROCFS_DIR = "proc"
FILES_DIR = "files"

# The commands behind the per-GPU view that every GPU check reads (`sitscheck.gpu`):
# each GPU check declares them among its evidence.
SMI_LIST = CommandSpec(NVIDIA_SMI_L, ("nvidia-smi", "-L"), "GPUs the driver lists")
SMI_QUERY = CommandSpec(NVIDIA_SMI_Q, ("nvidia-smi", "-q"), "full per-GPU query")
SMI_CSV = CommandSpec(
    NVIDIA_SMI_QUERY_GPU,
    ("nvidia-smi", f"--query-gpu={QUERY_GPU_FIELDS}", "--format=csv"),
    "one CSV sample of every GPU",
)
SMI_DMON = CommandSpec(
    NVIDIA_SMI_DMON,
    ("nvidia-smi", "dmon", "-s", "pucvmet", "-c", "1"),
    "one dmon sample (utilization, power, clocks, violations, memory, ECC, PCIe)",
)
GPU_VIEW_COMMANDS = (SMI_LIST, SMI_QUERY, SMI_CSV, SMI_DMON)

# Top-level values of a GPU's NVML record read as one: identity, firmware and modes.
GPU_IDENTITY_KEYS = (
    "name",
    "uuid",
    "pci_bus_id",
    "pci_device_id",
    "serial",
    "vbios",
    "inforom_image",
    "persistence_mode",
    "recovery_action",
)
