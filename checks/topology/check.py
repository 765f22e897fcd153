"""The `topology` check: sources → parse + NVML view → judge → result."""

from __future__ import annotations

from sitscheck.contract import CommandSpec, EvidenceSpec, LazyCheck, MetricSpec, ProfileKey
from sitscheck.sources.artifacts import NVIDIA_SMI_TOPO, SMI_LIST
from sitscheck.status import Layer

TOPO = CommandSpec(NVIDIA_SMI_TOPO, ("nvidia-smi", "topo", "-m"), "GPU/NIC topology matrix")


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
    codes = "sitscheck.checks.topology.codes:CODES"
    facts = "sitscheck.checks.topology.facts:Facts"
    profile_keys = (
        ProfileKey("gpus_per_board", "integer", "GPUs one baseboard holds (HGX H200: 8)"),
        ProfileKey(
            "nvlink.per_pair",
            "integer",
            "bonded NVLinks topo -m shows between every two GPUs of the board (NV18)",
        ),
        ProfileKey(
            "nic_pairing",
            "string[]",
            "topo kinds accepted between a GPU and its nearest NIC ([PIX, PXB])",
        ),
    )
    evidence = EvidenceSpec(
        summary=(
            "nvidia-smi topo -m (GPU/NIC matrix, CPU/NUMA affinity), NVML P2P status and common "
            "ancestor per GPU pair, sysfs numa_node/local_cpulist"
        ),
        commands=(TOPO, SMI_LIST),
        nvml=("pci_bus_id", "pairs"),
        sysfs_paths=("sitscheck.sources.pci:gpu_path_files",),
    )
    impl = "sitscheck.checks.topology.impl:TopologyImpl"
