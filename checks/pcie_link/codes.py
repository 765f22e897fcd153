"""The `pcie_link` check's finding codes: severity, meaning, action and kind, written once."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

CODES = Codes(
    [
        CodeSpec(
            "pcie_link.width_degraded",
            Severity.WARNING,
            (
                "the GPU's link (or a port on its path) runs narrower than both ends allow, "
                "e.g. x8 of x16: half the bandwidth; seed 000's table: Gen4 x8 ≈ 70 % of "
                "baseline TensorRT throughput"
            ),
            (
                "reseat the GPU (and its riser or cable) and check the slot; look for AER "
                "errors on the upstream port; if the link stays narrow, replace the riser or "
                "RMA the GPU"
            ),
            FindingKind.CONDITION,
            ActionCategory.ISOLATE,
        ),
        CodeSpec(
            "pcie_link.sysfs_vanished",
            Severity.UNKNOWN,
            (
                "the sysfs folder of the GPU or a port on its path disappeared while its link "
                "was read (hot-unplug, fallen off the bus, a reset under way): the link state "
                "is unknown"
            ),
            (
                "run `lspci -s <bus id>` and read the kernel log (pcie_aer, xid: fallen off the"
                " bus, Xid 79, surprise link down); if the device is gone, drain the node and "
                "reseat or replace it; if it is back, rerun sitscheck"
            ),
            FindingKind.CONDITION,
            ActionCategory.TRIAGE,
        ),
    ]
)
