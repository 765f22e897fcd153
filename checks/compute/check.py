"""The `compute` check: the seeded GEMM's record (accept/compute.json) → silent data corruption
(repeats, GPUs and an fp64 tile compared) and measured TFLOP/s."""

from __future__ import annotations

from sitscheck.contract import EvidenceSpec, LazyCheck, MetricSpec, WorkloadSpec
from sitscheck.status import Layer

RECORD = "accept/compute.json"


class ComputeCheck(LazyCheck):
    name = "compute"
    summary = "seeded bf16 GEMM: bit-identical repeats and GPUs, fp64 tile, TFLOP/s (accept)"
    layer = Layer.HARDWARE
    needs_gpu = True
    metrics = (
        MetricSpec("sitscheck.accept.compute.tflops", "TFLOP/s", "median measured bf16 GEMM rate"),
        MetricSpec(
            "sitscheck.accept.compute.mismatched_repeats",
            "{repeat}",
            "repeats whose output differed from the first",
        ),
    )
    codes = "sitscheck.checks.compute.codes:CODES"
    facts = "sitscheck.checks.compute.facts:Facts"
    workload = WorkloadSpec(
        phase="compute",
        module="sitscheck.probes.accept",
        record=RECORD,
        summary="a seeded 8192³ bf16 tensor-core GEMM repeated on each GPU: each repeat's "
        "digest against the first, every GPU's against the others', one tile against fp64",
        share=0.10,
        order=20,
    )
    evidence = EvidenceSpec(summary="the compute screen's record (bundle accept/compute.json)")
    impl = "sitscheck.checks.compute.judge:ComputeImpl"
