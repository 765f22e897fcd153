"""The `bandwidth` check's finding codes: severity, meaning, action and kind, written once.

The low-bandwidth verdicts are rules (rules/bandwidth.yaml), not codes of the check."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

COPY_MISMATCH_ACTION = (
    "the GPU's memory returned other data than was written: drain the GPU, run "
    "`dcgmi diag -r 3` (memory tests) and check the ECC counters; RMA if it repeats"
)

CODES = Codes(
    [
        CodeSpec(
            "bandwidth.copy_mismatch",
            Severity.CRITICAL,
            "a device-local copy left other data in the GPU's memory than it copied (--bandwidth)",
            COPY_MISMATCH_ACTION,
            FindingKind.CONDITION,
            ActionCategory.ISOLATE,
        ),
    ]
)
