"""The `multigpu` check: the multi-GPU phase's record (accept/multigpu.json) → whether every
rank of NCCL's all-reduce ran and read right sums. The all-reduce's bus bandwidth is a fact of
the `bandwidth` check (`nccl`), judged there against the profile (rules/bandwidth.yaml); the
peer-to-peer matrix is the bandwidth probe's (`pairs`)."""

from __future__ import annotations

from sitscheck.contract import EvidenceSpec, LazyCheck, WorkloadSpec
from sitscheck.status import Layer

RECORD = "accept/multigpu.json"


class MultiGpuCheck(LazyCheck):
    name = "multigpu"
    summary = "NCCL all-reduce over every GPU: each rank ran, its sums right (accept, 2+ GPUs)"
    layer = Layer.HARDWARE
    needs_gpu = True
    codes = "sitscheck.checks.multigpu.codes:CODES"
    facts = "sitscheck.checks.multigpu.facts:Facts"
    workload = WorkloadSpec(
        phase="multigpu",
        module="sitscheck.probes.nccl",
        record=RECORD,
        summary="NCCL's all-reduce (PyTorch's torch.distributed), one rank per GPU, every GPU "
        "of the phase at once: bus bandwidth as nccl-tests counts it, and the sums checked",
        share=0.10,  # 30 s of the default 300 (the phase runs from 20 s: MIN_PHASE_S)
        order=50,
        multi_gpu=True,
        startup_s=12.0,  # an interpreter and PyTorch per rank, then NCCL's communicator
    )
    evidence = EvidenceSpec(summary="the multi-GPU phase's record (bundle accept/multigpu.json)")
    impl = "sitscheck.checks.multigpu.judge:MultiGpuImpl"
