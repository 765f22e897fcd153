"""The `soak` check's finding codes (its thresholds are rules: rules/acceptance.yaml)."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

CODES = Codes(
    [
        CodeSpec("soak.digest_mismatch", Severity.CRITICAL,
                 "silent data corruption suspected under sustained load: the product's bits "
                 "changed during the soak",
                 "drain the GPU now (its results cannot be trusted); check its cooling; RMA if "
                 "it repeats", FindingKind.CONDITION, ActionCategory.ISOLATE),
        CodeSpec("soak.workload_hung", Severity.CRITICAL,
                 "the soak stopped responding and was killed",
                 "reset the GPU (`nvidia-smi -r`) and rerun; a GPU that hangs again is faulty",
                 FindingKind.CONDITION, ActionCategory.RESET_GPU),
    ]
)  # fmt: skip
