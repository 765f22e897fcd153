"""Running the planned phases: each phase's children, what the parent reads around them, and
the phase's record (`accept/<phase>.json`, the artifact its check reads).

A record is written for every phase of the plan, run or not: a phase left out says why
(`skipped`), a GPU it did not run on says why (`not_run`), so the checks never take a missing
record for a pass.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from msgspec import Struct, field

from ..contract.phase_record import FORMAT as RECORD_FORMAT
from ..threads import CannotStart
from ..workloads.children import Child, Progress, Target, run_children, workload_args
from ..workloads.gpus import NodeGpus, Sampler
from .plan import Plan, PlannedPhase

RECORD_VERSION = 1


def record_name(phase: str) -> str:
    return f"accept/{phase}.json"


class Injection(Struct, frozen=True):
    """A test-only fault (`--inject FAULT:GPU`): passed to that GPU's child of the phase."""

    fault: str
    gpu: int

    @property
    def phase(self) -> str:
        return self.fault.partition("-")[0] if self.fault != "hang" else "*"


class PhaseContext(Struct):
    """What every phase needs: the GPUs, the plan's start, the stop test, progress, options;
    the clock its deadlines are on (a test's may jump past them)."""

    gpus: NodeGpus
    began: float  # start of the command on `clock` (the plan's 0)
    stopped: Callable[[], bool]
    engine: str
    progress: Progress | None = None
    injections: tuple[Injection, ...] = ()
    blocked: dict[int, str] = field(default_factory=dict)  # GPU index -> why no stress on it
    digests: dict[int, str] = field(default_factory=dict)  # compute's digest per GPU (soak)
    baseline_used: dict[int, int | None] = field(default_factory=dict)  # memory before any load
    clock: Callable[[], float] = time.monotonic


def run_plan(
    plan: Plan, ctx: PhaseContext, extra: dict[str, Callable[[PlannedPhase], dict[str, Any]]]
) -> dict[str, str]:
    """Every phase of `plan` in order; returns each record's artifact name -> JSON text.
    `extra`: phases run by a function of their own (bandwidth, multigpu) rather than by
    workload children of the module the phase declares."""
    records: dict[str, str] = {}
    for phase in plan.phases:
        started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
        if phase.skipped is None and not ctx.stopped() and phase_targets(phase, ctx):
            _cool_down(ctx, phase)
        if phase.skipped is not None:
            record = _record(phase, started_at, None, [], skipped=phase.skipped)
        elif ctx.stopped():
            record = _record(phase, started_at, None, _not_run(ctx, phase, "interrupted before "
                                                                  "the phase started"))  # fmt: skip
        elif phase.name in extra:
            record = {**_record(phase, started_at, None, []), **extra[phase.name](phase)}
        else:
            record = _run_workload(phase, ctx, started_at)
            if ctx.stopped():
                record["memory_after_stop"] = memory_after_stop(ctx)
        records[record_name(phase.name)] = json.dumps(record, indent=1)
    return records


MEMORY_SETTLE_S = 1.0
MEMORY_SLACK_BYTES = 64 << 20


def memory_after_stop(ctx: PhaseContext) -> dict[str, Any]:
    """After a stop: each GPU's memory in use against the baseline taken before any load,
    polled until it is back (within MEMORY_SLACK_BYTES) or MEMORY_SETTLE_S has passed."""
    stopped_at = time.monotonic()
    while True:
        used = {i: ctx.gpus.memory_used(i) for i in ctx.baseline_used}
        back = all(
            u is not None and base is not None and u <= base + MEMORY_SLACK_BYTES
            for (i, u), base in ((item, ctx.baseline_used[item[0]]) for item in used.items())
        )
        waited = time.monotonic() - stopped_at
        if back or waited >= MEMORY_SETTLE_S:
            return {
                "back_at_baseline": back,
                "after_s": round(waited, 3),
                "gpus": [
                    {"index": i, "baseline_bytes": ctx.baseline_used[i], "used_bytes": used[i]}
                    for i in sorted(used)
                ],
            }
        time.sleep(0.05)


def _cool_down(ctx: PhaseContext, phase: PlannedPhase) -> None:
    until = ctx.began + phase.start_s
    while not ctx.stopped() and ctx.clock() < until:
        time.sleep(min(0.2, max(until - ctx.clock(), 0.0)))


def phase_targets(phase: PlannedPhase, ctx: PhaseContext) -> list[Target]:
    return [t for t in ctx.gpus.targets if t.index in phase.gpus and t.index not in ctx.blocked]


def _run_workload(phase: PlannedPhase, ctx: PhaseContext, started_at: str) -> dict[str, Any]:
    targets = phase_targets(phase, ctx)
    deadline = ctx.began + phase.start_s + phase.seconds
    before = _around(phase, ctx, targets)
    sampler = Sampler(ctx.gpus, [t.index for t in targets]) if phase.name == "soak" else None
    if sampler is not None:
        try:
            sampler.start()
        except CannotStart as exc:  # no trace, no soak: a load nobody watches judges nothing
            why = f"not run: {exc}: the soak is not run without its trace"
            return _record(phase, started_at, None, _not_run(ctx, phase, why))
    try:
        children = run_children(
            phase.module, targets, lambda t: _args(phase, ctx, t), deadline, ctx.stopped,
            ctx.progress, startup_s=phase.startup_s, clock=ctx.clock,
        )  # fmt: skip
    finally:
        if sampler is not None:
            sampler.stop()
    after = _around(phase, ctx, targets)
    for child in children:
        _complete(phase, ctx, child, before, after, sampler)
    engine = next((c.engine for c in children if c.engine), None)
    blocked = [g for g in phase.gpus if g in ctx.blocked]
    entries = [c.as_record() for c in children] + [
        not_run_entry(ctx, g, ctx.blocked[g]) for g in blocked
    ]
    entries.sort(key=lambda e: int(e["index"]))
    record = _record(phase, started_at, engine, entries)
    if not entries:  # no GPU to load: why (NVML could not be used), for the check to say
        record["reason"] = ctx.gpus.unavailable
    return record


def _args(phase: PlannedPhase, ctx: PhaseContext, target: Target) -> list[str]:
    args = workload_args(phase.name, phase.work_s, ctx.engine)
    if phase.name == "soak" and target.index in ctx.digests:
        args += ["--expect-digest", ctx.digests[target.index]]
    for injection in ctx.injections:
        if injection.gpu == target.index and injection.phase in (phase.name, "*"):
            args += ["--inject", injection.fault]
    return args


def _around(phase: PlannedPhase, ctx: PhaseContext, targets: Sequence[Target]) -> dict[int, Any]:
    """What the parent reads of each GPU before and after a phase: ECC around the memory test,
    the throttle counters around the soak."""
    if phase.name == "memtest":
        return {t.index: ctx.gpus.ecc_state(t.index) for t in targets}
    if phase.name == "soak":
        return {t.index: ctx.gpus.violations_ns(t.index) for t in targets}
    return {}


def _complete(
    phase: PlannedPhase,
    ctx: PhaseContext,
    child: Child,
    before: dict[int, Any],
    after: dict[int, Any],
    sampler: Sampler | None,
) -> None:
    index = child.target.index
    if child.result is None:
        child.result = {}
    result = child.result
    if phase.name == "memtest":
        result["ecc_before"], result["ecc_after"] = before.get(index), after.get(index)
    elif phase.name == "compute" and isinstance(result.get("digest"), str):
        ctx.digests[index] = str(result["digest"])
    elif phase.name == "soak":
        result["times"] = [[t, ms] for t, ms in child.times]
        result["samples"] = sampler.samples.get(index, []) if sampler else []
        # the samples' clock starts with the sampler, the iteration times' with the load
        result["load_started_s"] = (
            round(child.ready - sampler.started, 3) if sampler and child.ready else None
        )
        result["max_sm_clock_mhz"] = ctx.gpus.max_sm_clock(index)
        result["violation_ns"] = {
            name: [value, after.get(index, {}).get(name)]
            for name, value in (before.get(index) or {}).items()
        }
    if not result:
        child.result = None


def _record(
    phase: PlannedPhase,
    started_at: str,
    engine: str | None,
    gpus: list[dict[str, Any]],
    skipped: str | None = None,
) -> dict[str, Any]:
    return {
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "phase": phase.name,
        "engine": engine,
        "planned_s": round(phase.seconds, 1),
        "started_at": started_at,
        "skipped": skipped,
        "gpus": gpus,
    }


def _not_run(ctx: PhaseContext, phase: PlannedPhase, why: str) -> list[dict[str, Any]]:
    return [not_run_entry(ctx, g, ctx.blocked.get(g, why)) for g in phase.gpus]


def not_run_entry(ctx: PhaseContext, index: int, why: str) -> dict[str, Any]:
    target = next(t for t in ctx.gpus.targets if t.index == index)
    return {**Child(target, status="not_run", reason=why).as_record(), "seconds": None}
