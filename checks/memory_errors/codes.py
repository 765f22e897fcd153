"""The `memory_errors` check's finding codes: severity, meaning, action and kind, written once."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

CODES = Codes(
    [
        CodeSpec(
            "memory_errors.remap_pending",
            Severity.WARNING,
            "a memory row is marked for remapping and waits for a GPU reset to take effect",
            (
                "drain the GPU and reset it so the remap takes effect; healthy once nothing is "
                "pending"
            ),
            FindingKind.CONDITION,
            ActionCategory.RESET_GPU,
        ),
        CodeSpec(
            "memory_errors.remap_failure",
            Severity.CRITICAL,
            "row remapping failed: a failing row could not be replaced (no spare rows left)",
            (
                "take the GPU out of service; open a hardware inspection/RMA with the remap "
                "counters and the kernel log's Xid 63/64 lines"
            ),
            FindingKind.CONDITION,
            ActionCategory.REPLACE,
        ),
        CodeSpec(
            "memory_errors.retired_pages_pending",
            Severity.WARNING,
            ("a page retirement waits for a GPU reset to take effect (GPUs before row remapping)"),
            "drain the GPU and reset it so the retirement takes effect",
            FindingKind.CONDITION,
            ActionCategory.RESET_GPU,
        ),
    ]
)
