"""The multi-GPU phase: NCCL's all-reduce over the phase's GPUs, one rank per GPU.

The ranks are the phase's children (`children.run_children`): each an isolated interpreter
(`sitscheck.probes.nccl`) that sees every GPU of the phase (CUDA_VISIBLE_DEVICES lists their
UUIDs in rank order), started, read and, at the phase's deadline, killed and reaped like any
phase's children. They meet at a FileStore in a folder made for the phase (mode 0700, removed
after it), so no other user can plant or read it, and no port is opened.

Environment: NCCL's own settings are the operator's. A child inherits only what a command
may (`command.child_environment`), which leaves NCCL_* out; the variables of NCCL, NVSHMEM and
PyTorch's symmetric memory set where sitscheck runs are passed on as they are, never forced
(on shared machines, NVLink multicast is switched off there: NCCL_NVLS_ENABLE=0,
NVSHMEM_DISABLE_NVLS=1, TORCH_SYMM_MEM_DISABLE_MULTICAST=1; on a customer's node NCCL's
defaults stand).

The peer-to-peer matrix of the phase is the bandwidth probe's (every ordered pair's peer
write, measured through the driver API in the bandwidth phase): it is not measured twice.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from ..probes.nccl import MODULE
from ..workloads.children import Child, Target, run_children
from .phases import PhaseContext, memory_after_stop, not_run_entry, phase_targets
from .plan import PlannedPhase

PASSED_ON = ("NCCL_", "NVSHMEM_", "TORCH_SYMM_MEM_")
RENDEZVOUS = "rendezvous"  # the FileStore's file in the phase's own folder
# A rank's time is the phase's to its deadline (its start-up, PyTorch and NCCL's communicator
# included, vary the most) less this, for printing its result and being reaped.
RESERVE_S = 2.0
# Below this, the ranks would still be starting (an interpreter and PyTorch each, CUDA, NCCL's
# communicator: ~6 s for one rank on an H200, more for eight) when the phase ends: not run.
MIN_PHASE_S = 20.0


def nccl_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The operator's NCCL, NVSHMEM and symmetric-memory settings, passed on unchanged."""
    return {key: value for key, value in environ.items() if key.startswith(PASSED_ON)}


def run_multigpu(phase: PlannedPhase, ctx: PhaseContext, module: str = MODULE) -> dict[str, Any]:
    """The phase's record fields (`engine`, `gpus`, `result`; the caller adds the header).
    `module`: each rank's module (a test's stand-in)."""
    targets = phase_targets(phase, ctx)
    blocked = [not_run_entry(ctx, g, ctx.blocked[g]) for g in phase.gpus if g in ctx.blocked]
    if len(targets) < 2:
        why = "not run: fewer than two GPUs left to take part"
        alone = [not_run_entry(ctx, t.index, why) for t in targets]
        fields = _fields(None, alone + blocked, {"nccl": None, "nccl_reason": why})
        if not fields["gpus"]:  # no GPU planned: why (NVML could not be used), for the check
            fields["reason"] = ctx.gpus.unavailable
        return fields
    ranks = {t.index: rank for rank, t in enumerate(targets)}
    deadline = ctx.began + phase.start_s + phase.seconds
    left = deadline - ctx.clock()
    if left < MIN_PHASE_S:
        why = (
            f"not run: the phase's {max(left, 0.0):.0f} s is too short for NCCL's start-up "
            f"and a 16 GiB all-reduce (at least {MIN_PHASE_S:.0f} s: a larger --budget)"
        )
        short = [not_run_entry(ctx, t.index, why) for t in targets]
        return _fields(None, short + blocked, {"nccl": None, "nccl_reason": why})
    with tempfile.TemporaryDirectory(prefix="sitscheck-nccl-", ignore_cleanup_errors=True) as home:
        store = os.path.join(home, RENDEZVOUS)

        def args_for(target: Target) -> list[str]:
            seconds = max(deadline - ctx.clock() - RESERVE_S, 1.0)  # until the deadline
            return ["--rank", str(ranks[target.index]), "--world", str(len(targets)),
                    "--rendezvous", store, "--seconds", f"{seconds:.1f}",
                    *_injected(ctx, phase, target)]  # fmt: skip

        children = run_children(
            module, targets, args_for, deadline, ctx.stopped, ctx.progress,
            env=nccl_environment(os.environ), visible=",".join(t.uuid for t in targets),
            clock=ctx.clock,
        )  # fmt: skip
    engine = next((c.engine for c in children if c.engine), None)
    fields = _fields(engine, [c.as_record() for c in children] + blocked, node_result(children))
    if ctx.stopped():
        fields["memory_after_stop"] = memory_after_stop(ctx)
    return fields


def _injected(ctx: PhaseContext, phase: PlannedPhase, target: Target) -> list[str]:
    """`--inject hang:GPU` (test-only): that GPU's rank never joins the others."""
    hang = any(i.fault == "hang" and i.gpu == target.index and i.phase in (phase.name, "*")
               for i in ctx.injections)  # fmt: skip
    return ["--inject", "hang"] if hang else []


def node_result(children: Sequence[Child]) -> dict[str, Any]:
    """The phase's own result: the ranks' shared figure (the first rank that has one) or why
    there is none (what a rank that ran found missing, else that no rank finished)."""
    results = [c.result for c in children if c.status == "ok" and c.result is not None]
    for result in results:
        if isinstance(result.get("nccl"), dict):
            return {"nccl": result["nccl"], "nccl_reason": None}
    reason = next((str(r["nccl_reason"]) for r in results if r.get("nccl_reason")), None)
    return {"nccl": None, "nccl_reason": reason or "no rank finished the all-reduce"}


def _fields(
    engine: str | None, entries: list[dict[str, Any]], result: dict[str, Any]
) -> dict[str, Any]:
    entries.sort(key=lambda e: int(e["index"]))
    return {"engine": engine, "gpus": entries, "result": result}
