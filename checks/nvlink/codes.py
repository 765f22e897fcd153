"""The `nvlink` check's finding codes: severity, meaning, action and kind, written once."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

CODES = Codes(
    [
        CodeSpec(
            "nvlink.link_inactive",
            Severity.CRITICAL,
            "NVLinks of the GPU are not active (down or never trained)",
            (
                "check the NVLink/NVSwitch fabric (nvidia-smi nvlink -s, fabric manager log, "
                "Xid 74); reset the GPU or reboot; if the link stays down, inspect the "
                "baseboard"
            ),
            FindingKind.CONDITION,
            ActionCategory.RESET_GPU,
        ),
        CodeSpec(
            "nvlink.errors_grew",
            Severity.CRITICAL,
            (
                "NVLink replay or recovery counters grew during the window: links retransmitted"
                " or retrained"
            ),
            (
                "drain the GPU, watch the counters under load (nvidia-smi nvlink -e), reset the"
                " GPU; if they grow again, inspect the baseboard"
            ),
            FindingKind.CONDITION,
            ActionCategory.RESET_GPU,
        ),
    ]
)
