"""The `infiniband` check's finding codes: severity, meaning, action and kind, written once.

Thresholds (rates, the profile's link rate) are rules (rules/infiniband.yaml); these codes are
what needs none: a port that is down, counters that must never move.
"""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

CODES = Codes(
    [
        CodeSpec(
            "infiniband.port_down",
            Severity.CRITICAL,
            (
                "an RDMA port is not ACTIVE/LinkUp (down, polling for a peer, training or in "
                "error recovery): no traffic crosses it, and every collective of the ranks "
                "using it stalls"
            ),
            (
                "check the cable, transceiver and switch port (ibstat, mlxlink -d <dev> -p 1, "
                "the switch's port log); reseat or replace the cable; an IB port that stays "
                "INIT needs the subnet manager"
            ),
            FindingKind.CONDITION,
            ActionCategory.TRIAGE,
            name="RDMA port down",
        ),
        CodeSpec(
            "infiniband.port_disabled",
            Severity.INFO,
            (
                "an RDMA port is administratively disabled (physical state 3: Disabled): "
                "expected on unused ports; a compute rail the profile counts (ib_ports) or a "
                "GPU's own NIC disabled is a rule's critical verdict"
            ),
            "if the port should carry traffic: enable it (ibportstate, ip link set up)",
            FindingKind.CONDITION,
            ActionCategory.CONFIGURE,
            name="RDMA port disabled",
        ),
        CodeSpec(
            "infiniband.link_errors_grew",
            Severity.CRITICAL,
            (
                "link_downed, local_link_integrity_errors or excessive_buffer_overrun_errors "
                "grew during the window: the link went down or dropped packets on a lossless "
                "fabric; RDMA connections across it fail"
            ),
            (
                "drain the node's multi-node work; check the cable/transceiver and the switch "
                "port (mlxlink --show_ber, ibdiagnet); replace the cable if it recurs"
            ),
            FindingKind.CONDITION,
            ActionCategory.REPLACE,
        ),
        CodeSpec(
            "infiniband.link_recovered",
            Severity.WARNING,
            (
                "link_error_recovery grew during the window: the link retrained (micro-flap), "
                "stalling traffic for milliseconds each time"
            ),
            (
                "watch the counter under load (perfquery -x); check the cable and transceiver "
                "(mlxlink --show_ber); replace the cable if it keeps retraining"
            ),
            FindingKind.CONDITION,
            ActionCategory.TRIAGE,
        ),
        CodeSpec(
            "infiniband.cq_overrun",
            Severity.WARNING,
            (
                "the kernel log reports a completion-queue overrun on the HCA (mlx5: CQ error, "
                "syndrome 0x1; mlx4: CQ overrun): the CQ was too small or polled too slowly, "
                "and it is now in error"
            ),
            (
                "find the process whose CQ overran (its RDMA errors at the same time); enlarge "
                "its CQ or poll faster (NCCL/UCX settings), and check the CPU it polls on is "
                "not starved"
            ),
            FindingKind.EVENT,
            ActionCategory.TRIAGE,
        ),
    ]
)
