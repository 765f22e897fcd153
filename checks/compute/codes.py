"""The `compute` check's finding codes."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

SDC = (
    "silent data corruption suspected: drain the GPU now (its results cannot be trusted), rerun "
    "`sitscheck accept`; RMA if it repeats"
)

CODES = Codes(
    [
        CodeSpec("compute.repeat_mismatch", Severity.CRITICAL,
                 "silent data corruption suspected: a repeat of the same product gave other bits",
                 SDC, FindingKind.CONDITION, ActionCategory.ISOLATE),
        CodeSpec("compute.node_mismatch", Severity.CRITICAL,
                 "silent data corruption suspected: the GPU's product differs from the other "
                 "GPUs' of the same model", SDC, FindingKind.CONDITION, ActionCategory.ISOLATE),
        CodeSpec("compute.reference_error", Severity.CRITICAL,
                 "silent data corruption suspected: a tile of the product is off its fp64 "
                 "reference beyond bf16 rounding", SDC, FindingKind.CONDITION,
                 ActionCategory.ISOLATE),
        CodeSpec("compute.workload_hung", Severity.CRITICAL,
                 "the compute screen stopped responding and was killed",
                 "reset the GPU (`nvidia-smi -r`) and rerun; a GPU that hangs again is faulty",
                 FindingKind.CONDITION, ActionCategory.RESET_GPU),
    ]
)  # fmt: skip
