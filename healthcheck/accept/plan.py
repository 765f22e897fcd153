"""The acceptance plan: which phases run, on which GPUs, for how long, within the budget.

The budget holds whatever happens: the passive checks, every phase with its cooldown, and the
rules and outputs after them fit in it, and each phase's deadline is its own start plus its
share, never later than the budget's end less what the report needs (`RESERVE_END_S`). The
soak takes what the fixed phases leave (about 120 s of a 300 s budget on 8 GPUs); several
phases asking for the remainder share it. Where the phases and cooldowns do not fit as asked
(a budget near the minimum, a plugin's large shares), the cooldowns are shortened first, then
every phase by the same factor: the budget holds first.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct

MIN_BUDGET_S = 60.0
RESERVE_START_S = 12.0  # the passive checks (the idle baseline) before any load
RESERVE_END_S = 15.0  # the kernel log read again, rules, outputs, children reaped
START_ALLOWANCE_S = 10.0  # by default, a child's interpreter, CUDA context and torch import
MIN_REMAINDER_S = START_ALLOWANCE_S + 5.0  # a phase taking the remainder gets at least this
MIN_WORK_S = 1.0  # what a child is asked to work at least (never past its phase)


class PhaseShare(Struct, frozen=True):
    """A phase as a check's workload declares it: its name, its share of the budget (a
    fraction; None: the remainder), the module its children run, the cooldown before it,
    whether it needs 2+ GPUs, and what of it a child needs to start."""

    name: str
    share: float | None
    module: str
    cooldown_s: float = 0.0
    multi_gpu: bool = False
    startup_s: float = START_ALLOWANCE_S


class PlannedPhase(Struct, frozen=True):
    name: str
    start_s: float  # from the start of the command
    seconds: float  # the phase's deadline is start_s + seconds
    work_s: float  # what the children are asked to spend working (seconds - start allowance)
    cooldown_s: float
    gpus: tuple[int, ...]
    skipped: str | None = None  # why it does not run (--skip, fewer than 2 GPUs)
    module: str = ""  # what its children run (a workload module)
    startup_s: float = 0.0  # what of `seconds` a child may need to start


class Plan(Struct, frozen=True):
    budget_s: float
    phases: tuple[PlannedPhase, ...]

    def lines(self) -> list[str]:
        """The plan as printed before it starts."""
        out = [f"sitscheck accept: plan for {self.budget_s:.0f} s"]
        out.append(f"  {'passive':<10} all GPUs  {RESERVE_START_S:>5.0f} s  (idle baseline)")
        for phase in self.phases:
            gpus = ",".join(str(g) for g in phase.gpus)
            if phase.skipped:
                out.append(f"  {phase.name:<10} skipped: {phase.skipped}")
                continue
            if not gpus:
                out.append(f"  {phase.name:<10} no GPU to load")
                continue
            cool = f" after {phase.cooldown_s:.0f} s cooldown" if phase.cooldown_s else ""
            out.append(f"  {phase.name:<10} GPUs {gpus:<4} {phase.seconds:>5.0f} s{cool}")
        out.append(f"  {'report':<10}           {RESERVE_END_S:>5.0f} s")
        return out


def make_plan(
    budget_s: float, phases: Sequence[PhaseShare], gpus: Sequence[int], skip: Sequence[str]
) -> Plan:
    if budget_s < MIN_BUDGET_S:
        raise ValueError(f"--budget {budget_s:g}: at least {MIN_BUDGET_S:g} s is needed")
    running = [p for p in phases if _skipped(p, skip, gpus) is None]
    usable = budget_s - RESERVE_START_S - RESERVE_END_S
    fixed = sum(p.share * budget_s for p in running if p.share is not None)
    cooldowns = sum(p.cooldown_s for p in running)
    takers = sum(1 for p in running if p.share is None)
    remainder = max((usable - fixed - cooldowns) / takers, MIN_REMAINDER_S) if takers else 0.0
    work = fixed + remainder * takers
    scale = min(usable / work, 1.0) if work > 0 else 1.0  # of the phases
    rest = max(usable - work * scale, 0.0)
    cool = min(rest / cooldowns, 1.0) if cooldowns > 0 else 1.0  # of the cooldowns
    planned: list[PlannedPhase] = []
    clock = RESERVE_START_S
    for phase in phases:
        why = _skipped(phase, skip, gpus)
        if why is not None:
            planned.append(
                PlannedPhase(phase.name, clock, 0.0, 0.0, 0.0, (), why, module=phase.module)
            )
            continue
        seconds = scale * (remainder if phase.share is None else phase.share * budget_s)
        cooldown = cool * phase.cooldown_s
        start = clock + cooldown
        planned.append(
            PlannedPhase(
                phase.name,
                start,
                seconds,
                max(seconds - phase.startup_s, min(MIN_WORK_S, seconds / 2.0)),
                cooldown,
                tuple(gpus),
                None,
                phase.module,
                phase.startup_s,
            )
        )
        clock = start + seconds
    return Plan(budget_s, tuple(planned))


def _skipped(phase: PhaseShare, skip: Sequence[str], gpus: Sequence[int]) -> str | None:
    if phase.name in skip:
        return f"--skip {phase.name}"
    if phase.multi_gpu and len(gpus) == 1:  # none known (no NVML): not run, UNKNOWN, not this
        return "not applicable: one GPU"
    return None
