"""The `bandwidth` check: the probe's record (bandwidth.json) + sysfs PCIe paths → judge; in
`sitscheck accept` on 2+ GPUs, with the multi-GPU phase's NCCL all-reduce (`nccl`)."""

from __future__ import annotations

from sitscheck.contract import EvidenceSpec, LazyCheck, MetricSpec, ProfileKey, WorkloadSpec
from sitscheck.sources.artifacts import SMI_LIST
from sitscheck.status import Layer


class BandwidthCheck(LazyCheck):
    name = "bandwidth"
    summary = "measured host↔GPU PCIe, HBM and peer bandwidth vs link and profile (--bandwidth)"
    layer = Layer.HARDWARE
    needs_gpu = True
    metrics = (
        MetricSpec("sitscheck.gpu.bandwidth", "By/s", "measured copy bandwidth, per direction"),
        MetricSpec("sitscheck.gpu.p2p.bandwidth", "By/s", "measured peer write bandwidth"),
        MetricSpec("sitscheck.bandwidth.probe.duration", "s", "wall time of the bandwidth probe"),
        MetricSpec(
            "sitscheck.nccl.allreduce.bus_bandwidth",
            "By/s",
            "NCCL all-reduce bus bandwidth over the node's GPUs (nccl-tests' busbw; accept)",
        ),
    )
    profile_keys = (
        ProfileKey(
            "nccl.all_reduce_ranks", "integer",
            "the GPU count nccl.all_reduce_bus_gbs_min holds for (a whole board: 8)",
        ),
        ProfileKey(
            "nccl.all_reduce_bus_gbs_min", "number",
            "NCCL all-reduce bus bandwidth floor, GB/s, on that many GPUs with NCCL's defaults "
            "(NVLink SHARP where the board has it)",
        ),
        ProfileKey(
            "nccl.all_reduce_ring_bus_gbs_min", "number",
            "the floor for any other GPU count, or with NVLink SHARP off (NCCL_NVLS_ENABLE=0): "
            "rings over NVLink",
        ),
    )  # fmt: skip
    codes = "sitscheck.checks.bandwidth.codes:CODES"
    facts = "sitscheck.checks.bandwidth.facts:Facts"
    # bandwidth.json is not a declared command: the probe runs only with --bandwidth (or
    # --load), after the sampling window (LiveSources), and `collect` records it then.
    evidence = EvidenceSpec(
        summary=(
            "the bandwidth probe's record (--bandwidth: pinned host↔GPU copies, device-local and "
            "peer copies timed with CUDA events; bundle bandwidth.json), nvidia-smi -L for the "
            "index, sysfs link speed/width along each GPU's path, NVML NVLink state per pair"
        ),
        commands=(SMI_LIST,),
        nvml=("pci_bus_id", "nvlink", "pairs"),
        sysfs_paths=("sitscheck.sources.pci:gpu_path_files",),
    )
    # in `sitscheck accept`, a phase after the soak's cooldown (the probe itself, run by the
    # parent: accept.session)
    workload = WorkloadSpec(
        phase="bandwidth",
        module="sitscheck.probes.bandwidth",
        record="bandwidth.json",
        summary="host↔device, HBM and peer copy bandwidth (the --bandwidth probe)",
        share=0.06,
        order=40,
        cooldown_s=10.0,
    )
    impl = "sitscheck.checks.bandwidth.impl:BandwidthImpl"
