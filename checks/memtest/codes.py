"""The `memtest` check's finding codes."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

RMA = "drain the GPU and keep it out of service; rerun `sitscheck accept`; RMA if it repeats"

CODES = Codes(
    [
        CodeSpec("memtest.bad_words", Severity.CRITICAL,
                 "the memory test read back other data than it wrote", RMA,
                 FindingKind.CONDITION, ActionCategory.REPLACE),
        CodeSpec("memtest.ecc_uncorrected", Severity.CRITICAL,
                 "new uncorrectable ECC errors during the memory test", RMA,
                 FindingKind.CONDITION, ActionCategory.REPLACE),
        CodeSpec("memtest.remap_failure", Severity.CRITICAL,
                 "a row remapping failed (no spare row left) during the memory test", RMA,
                 FindingKind.CONDITION, ActionCategory.REPLACE),
        CodeSpec("memtest.ecc_corrected", Severity.WARNING,
                 "new corrected ECC errors during the memory test",
                 "watch the GPU's ECC counters; a count that keeps growing is a failing cell",
                 FindingKind.CONDITION, ActionCategory.TRIAGE),
        CodeSpec("memtest.workload_hung", Severity.CRITICAL,
                 "the memory test stopped responding and was killed",
                 "reset the GPU (`nvidia-smi -r`) and rerun; a GPU that hangs again is faulty",
                 FindingKind.CONDITION, ActionCategory.RESET_GPU),
    ]
)  # fmt: skip
