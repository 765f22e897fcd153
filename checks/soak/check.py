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
            "accept",
            "object",
            "acceptance references: tflops per engine "
            "({torch: 664, ptx: 288}), iteration_cv_max, dense_bf16_tflops",
        ),
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
    )
    evidence = EvidenceSpec(summary="the soak's record (bundle accept/soak.json)")
    impl = "sitscheck.checks.soak.judge:SoakImpl"
