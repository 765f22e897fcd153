"""The `pcie_aer` check's finding codes: severity, meaning, action and kind, written once."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

CODES = Codes(
    [
        CodeSpec(
            "pcie_aer.uncorrected_fatal",
            Severity.CRITICAL,
            (
                "an uncorrectable fatal AER error on the GPU's PCIe path (or on a device on no "
                "GPU's path): the link failed; the GPU usually falls off the bus"
            ),
            (
                "drain the node; reseat/inspect the GPU, riser and cable on this path; if it "
                "recurs, replace the failing part"
            ),
            FindingKind.EVENT,
            ActionCategory.ISOLATE,
        ),
        CodeSpec(
            "pcie_aer.uncorrected_nonfatal",
            Severity.WARNING,
            (
                "an uncorrectable non-fatal AER error on the path: a transaction was lost, the "
                "link stayed up"
            ),
            "watch for recurrence; inspect the link (riser, cable, slot) if it repeats",
            FindingKind.EVENT,
            ActionCategory.TRIAGE,
        ),
        CodeSpec(
            "pcie_aer.counter_fatal",
            Severity.CRITICAL,
            (
                "sysfs AER counters on the path count more fatal errors than the kernel log "
                "shows (the log rotated, or firmware handled them)"
            ),
            "inspect the link on this path (riser, cable, slot); check the BMC log",
            FindingKind.CONDITION,
            ActionCategory.TRIAGE,
        ),
        CodeSpec(
            "pcie_aer.counter_nonfatal",
            Severity.WARNING,
            (
                "sysfs AER counters on the path count more non-fatal errors than the kernel log"
                " shows"
            ),
            "inspect the link on this path (riser, cable, slot); check the BMC log",
            FindingKind.CONDITION,
            ActionCategory.TRIAGE,
        ),
        CodeSpec(
            "pcie_aer.sysfs_vanished",
            Severity.UNKNOWN,
            (
                "the sysfs folder of the GPU or a port on its path disappeared while its AER "
                "counters were read (hot-unplug, fallen off the bus, a reset under way): they "
                "are unknown"
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
