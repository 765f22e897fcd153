"""The `bandwidth` check: the probe's record (bandwidth.json) + sysfs PCIe paths → judge."""

from __future__ import annotations

from sitscheck.contract import EvidenceSpec, LazyCheck, MetricSpec, WorkloadSpec
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
    )
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
