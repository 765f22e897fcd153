"""The `soak` check: every GPU at full load at once (accept/soak.json) → power, clocks,
temperature, clock-event reasons and iteration-time statistics over the steady state."""

from __future__ import annotations

from sitscheck.contract import EvidenceSpec, LazyCheck, MetricSpec, ProfileKey, WorkloadSpec
from sitscheck.status import Layer

RECORD = "accept/soak.json"


class SoakCheck(LazyCheck):
    name = "soak"
    summary = "all GPUs at full load for ~2 min: throttling, thermals, jitter, TFLOP/s (accept)"
    layer = Layer.HARDWARE
    needs_gpu = True
    metrics = (
        MetricSpec("sitscheck.accept.soak.tflops", "TFLOP/s", "median TFLOP/s in the steady state"),
        MetricSpec("sitscheck.accept.soak.power", "W", "median power in the steady state"),
        MetricSpec("sitscheck.accept.soak.temperature.max", "Cel", "highest GPU temperature"),
    )
    codes = "sitscheck.checks.soak.codes:CODES"
    facts = "sitscheck.checks.soak.facts:Facts"
    profile_keys = (
        ProfileKey(
            "accept", "object", "acceptance references (sitscheck accept, rules/acceptance.yaml)"
        ),
        ProfileKey(
            "accept.tflops_reference",
            "object",
            "bf16 8192³ GEMM TFLOP/s a healthy GPU of the model sustains, per engine",
        ),
        ProfileKey("accept.tflops_reference.torch", "number", "with PyTorch (cuBLAS), TFLOP/s"),
        ProfileKey("accept.tflops_reference.ptx", "number", "with the PTX mma kernel, TFLOP/s"),
        ProfileKey(
            "accept.iteration_cv_max",
            "number",
            "the soak's iteration-time coefficient of variation a healthy GPU stays under",
        ),
        ProfileKey("accept.dense_bf16_tflops", "number", "dense bf16 tensor peak (data sheet)"),
    )
    workload = WorkloadSpec(
        phase="soak",
        module="sitscheck.probes.accept",
        record=RECORD,
        summary="the seeded GEMM back to back on every GPU at once, sampled every second "
        "(clocks, power, temperatures, clock-event reasons), every iteration timed",
        share=None,
        order=30,
        cooldown_s=5.0,
        keeps_busy=True,  # the GEMM back to back: `run --load` runs it through the window
    )
    evidence = EvidenceSpec(summary="the soak's record (bundle accept/soak.json)")
    impl = "sitscheck.checks.soak.judge:SoakImpl"
