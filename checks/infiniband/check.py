"""The `infiniband` check: /sys/class/infiniband at both ends of the window → judge."""

from __future__ import annotations

from sitscheck.contract import (
    Anchor,
    EvidenceSpec,
    KernelLogInterest,
    LazyCheck,
    MetricKind,
    MetricSpec,
    ProfileKey,
)
from sitscheck.status import Layer

IB = "class/infiniband"
# Every file the check reads, relative to /sys (a bundle's sysfs/): read at the start and at
# the end of the sampling window. `collect` copies them through the class links, into plain
# folders under the link's own path (`sysfs/class/infiniband/mlx5_0/ports/1/state`), and
# records the end reading under `sysfs-end/` (docs/infiniband.md).
SYSFS_GLOBS = (
    f"{IB}/*/ports/*/state",
    f"{IB}/*/ports/*/phys_state",
    f"{IB}/*/ports/*/rate",
    f"{IB}/*/ports/*/link_layer",
    f"{IB}/*/ports/*/counters/*",
    f"{IB}/*/ports/*/counters_ext/*",
    f"{IB}/*/ports/*/hw_counters/*",
    f"{IB}/*/hw_counters/*",
    f"{IB}/*/hca_type",
    f"{IB}/*/fw_ver",
    f"{IB}/*/board_id",
    f"{IB}/*/node_type",
    f"{IB}/*/device/uevent",
)


class InfinibandCheck(LazyCheck):
    name = "infiniband"
    summary = (
        "InfiniBand/RoCE ports up at the profile's rate; link errors, retransmits and CQ "
        "overflows over the window; each HCA joined to its GPU"
    )
    layer = Layer.HARDWARE
    needs_gpu = False
    metrics = (
        MetricSpec("hw.network.up", "1", "port state: 1 ACTIVE and LinkUp, else 0"),
        MetricSpec("hw.network.bandwidth.limit", "By/s", "the port's link rate"),
        MetricSpec("hw.network.io", "By", "bytes by network.io.direction", MetricKind.COUNTER),
        MetricSpec(
            "hw.network.packets",
            "{packet}",
            "packets by network.io.direction",
            MetricKind.COUNTER,
        ),
        MetricSpec("hw.errors", "{error}", "port error counters (error.type)", MetricKind.COUNTER),
        MetricSpec(
            "sitscheck.infiniband.retransmits",
            "{packet}",
            "mlx5 retransmission hw_counters (counter)",
            MetricKind.COUNTER,
        ),
        MetricSpec(
            "sitscheck.infiniband.retransmit_rate",
            "1",
            "retransmissions per packet sent during the window (a fraction)",
        ),
        MetricSpec(
            "sitscheck.infiniband.roce.congestion",
            "{packet}",
            "RoCE ECN/CNP counters (counter): np_cnp_sent, rp_cnp_handled, ...",
            MetricKind.COUNTER,
        ),
        MetricSpec(
            "sitscheck.infiniband.cq_overflows",
            "{overflow}",
            "CQ overflows the HCA counted (mlx4 num_cqovf)",
            MetricKind.COUNTER,
        ),
        MetricSpec(
            "sitscheck.infiniband.cq_overruns_logged",
            "{event}",
            "CQ overrun events of the HCA in the kernel log",
            MetricKind.EVENT,
        ),
    )
    codes = "sitscheck.checks.infiniband.codes:CODES"
    facts = "sitscheck.checks.infiniband.facts:Facts"
    config = "sitscheck.checks.infiniband.facts:Settings"
    profile_keys = (
        ProfileKey(
            "ib_rate_gbps",
            "number",
            "InfiniBand rate (Gb/s) each compute HCA port must run at (HGX H100/H200/B200: 400 "
            "NDR; A100: 200 HDR)",
        ),
    )
    evidence = EvidenceSpec(
        summary=(
            "/sys/class/infiniband: port state, phys_state, rate, link_layer, counters and "
            "hw_counters at both ends of the sampling window, each HCA's PCI function "
            "(device/uevent) and the PCIe ports above HCAs and GPUs; kernel-log CQ overruns"
        ),
        sysfs=SYSFS_GLOBS,
        sysfs_paths=("sitscheck.checks.infiniband.evidence:pci_path_files",),
        kernel_log=True,
    )
    kernel_log = KernelLogInterest(
        anchors=(Anchor(b"CQ error on CQN "), Anchor(b"CQ overrun on CQN ")),
        handler="sitscheck.checks.infiniband.cqlog:CqOverrunLines",
    )
    impl = "sitscheck.checks.infiniband.impl:InfinibandImpl"
