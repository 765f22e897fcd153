"""The `memtest` check: the memory test's record (accept/memtest.json) → bad words, ECC."""

from __future__ import annotations

from sitscheck.contract import EvidenceSpec, LazyCheck, MetricSpec, WorkloadSpec
from sitscheck.status import Layer

RECORD = "accept/memtest.json"


class MemtestCheck(LazyCheck):
    name = "memtest"
    summary = "HBM pattern test of ≥ 90 % of free memory, ECC before/after (sitscheck accept)"
    layer = Layer.HARDWARE
    needs_gpu = True
    metrics = (
        MetricSpec("sitscheck.accept.memtest.bad_words", "{word}", "words read back wrong"),
        MetricSpec("sitscheck.accept.memtest.bytes", "By", "bytes tested per pass"),
    )
    codes = "sitscheck.checks.memtest.codes:CODES"
    facts = "sitscheck.checks.memtest.facts:Facts"
    workload = WorkloadSpec(
        phase="memtest",
        module="sitscheck.probes.accept",
        record=RECORD,
        summary="address-in-address, walking ones, moving inversions and a seeded random "
        "pattern over ≥ 90 % of each GPU's free memory, in parallel, pass after pass",
        share=0.08,
        order=10,
        startup_s=5.0,  # no PyTorch: the interpreter and a CUDA context
    )
    evidence = EvidenceSpec(summary="the memory test's record (bundle accept/memtest.json)")
    impl = "sitscheck.checks.memtest.judge:MemtestImpl"
