"""The acceptance plan (`sitscheck.accept.plan`): budgets, phases, and the budget holding."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sitscheck.accept.command import phase_shares
from sitscheck.accept.plan import (
    MIN_BUDGET_S,
    RESERVE_END_S,
    RESERVE_START_S,
    PhaseShare,
    Plan,
    make_plan,
)
from sitscheck.app import selected_checks
from sitscheck.config import RunConfig
from sitscheck.contract.evidence import gather

MODULE = "sitscheck.probes.accept"
EPSILON = 1e-6


def declared() -> list[PhaseShare]:
    """The shipped checks' workloads, as `accept` plans them."""
    return phase_shares(gather(selected_checks(RunConfig())))


def by_name(plan: Plan) -> dict[str, object]:
    return {p.name: p for p in plan.phases}


def assert_holds(plan: Plan) -> None:
    """Phases in order, none overlapping, the first after the passive checks, the last ending
    by the budget less what the report needs; each child asked to work no longer than its
    phase lasts."""
    clock = RESERVE_START_S
    for phase in plan.phases:
        assert phase.start_s >= clock - EPSILON, phase
        if phase.skipped is None:
            assert phase.seconds > 0 and phase.cooldown_s >= 0, phase
            assert 0 < phase.work_s <= phase.seconds + EPSILON, phase
            assert phase.start_s >= clock + phase.cooldown_s - EPSILON, phase
            clock = phase.start_s + phase.seconds
    assert clock <= plan.budget_s - RESERVE_END_S + EPSILON, plan


def test_the_shipped_phases_in_their_order() -> None:
    assert [p.name for p in declared()] == ["memtest", "compute", "soak", "bandwidth", "multigpu"]
    assert {p.module for p in declared()} >= {MODULE}
    assert [p.name for p in declared() if p.multi_gpu] == ["multigpu"]


@pytest.mark.parametrize("gpus", [[0], list(range(8))])
def test_the_default_budget_on_one_and_eight_gpus(gpus: list[int]) -> None:
    """One GPU: the multi-GPU phase is planned out and the soak takes its time; eight: it runs
    last, 10 % of the budget, and the soak has 30 s less."""
    plan = make_plan(300.0, declared(), gpus, [])
    assert_holds(plan)
    phases = by_name(plan)
    memtest, compute, soak, bandwidth, multi = (
        phases[n] for n in ("memtest", "compute", "soak", "bandwidth", "multigpu")
    )
    several = len(gpus) > 1
    soak_s = 156.0 if several else 186.0  # the remainder
    assert memtest.start_s == RESERVE_START_S and memtest.seconds == pytest.approx(24.0)
    assert compute.seconds == pytest.approx(30.0)
    assert soak.cooldown_s == 5.0 and soak.seconds == pytest.approx(soak_s)
    assert bandwidth.cooldown_s == 10.0 and bandwidth.seconds == pytest.approx(18.0)
    last = multi if several else bandwidth
    assert last.start_s + last.seconds == pytest.approx(300.0 - RESERVE_END_S)
    assert all(p.gpus == tuple(gpus) and p.skipped is None for p in plan.phases if p is not multi)
    if several:
        assert multi.skipped is None and multi.gpus == tuple(gpus)
        assert multi.seconds == pytest.approx(30.0) and multi.cooldown_s == 0.0
    else:
        assert multi.skipped == "not applicable: one GPU" and multi.gpus == ()
    assert memtest.work_s == pytest.approx(24.0 - 5.0)  # memtest starts without PyTorch
    assert soak.work_s == pytest.approx(soak_s - 10.0)


def test_below_the_minimum_budget_is_refused_naming_the_option() -> None:
    with pytest.raises(ValueError, match=r"^--budget 59: at least 60 s is needed$"):
        make_plan(59.0, declared(), [0], [])
    assert_holds(make_plan(MIN_BUDGET_S, declared(), [0], []))


def test_the_minimum_budget_still_ends_before_the_report() -> None:
    """60 s on one GPU: the shares and cooldowns no longer fit as asked: the cooldowns are
    shortened so that the last phase ends by budget - RESERVE_END_S; the phases keep their
    time. On two GPUs the multi-GPU phase's share comes too: no cooldown is left, and every
    phase is shortened by the same factor."""
    names = ("memtest", "compute", "soak", "bandwidth")
    plan = make_plan(60.0, declared(), [0], [])
    assert_holds(plan)
    last = plan.phases[-2]  # bandwidth: multigpu is planned out on one GPU
    assert last.name == "bandwidth" and last.start_s + last.seconds == pytest.approx(45.0)
    phases = by_name(plan)
    assert [phases[n].seconds for n in names] == pytest.approx([4.8, 6.0, 15.0, 3.6])
    assert phases["soak"].cooldown_s + phases["bandwidth"].cooldown_s == pytest.approx(3.6)

    plan = make_plan(60.0, declared(), [0, 1], [])
    assert_holds(plan)
    last = plan.phases[-1]
    assert last.name == "multigpu" and last.start_s + last.seconds == pytest.approx(45.0)
    phases = by_name(plan)
    scale = 33.0 / (4.8 + 6.0 + 15.0 + 3.6 + 6.0)  # what the phases fit in / what they asked
    asked = [4.8, 6.0, 15.0, 3.6, 6.0]
    assert [phases[n].seconds for n in (*names, "multigpu")] == pytest.approx(
        [scale * s for s in asked]
    )
    assert all(p.cooldown_s == 0.0 for p in plan.phases)


def test_phases_that_do_not_fit_even_without_cooldowns_are_shortened_alike() -> None:
    phases = [PhaseShare("a", 0.5, MODULE, cooldown_s=20.0), PhaseShare("b", 0.5, MODULE)]
    plan = make_plan(100.0, phases, [0], [])
    assert_holds(plan)
    a, b = plan.phases
    assert a.cooldown_s == 0.0 and a.seconds == pytest.approx(b.seconds) == pytest.approx(36.5)


def test_a_skipped_phase_gives_its_time_to_the_soak() -> None:
    whole = by_name(make_plan(300.0, declared(), [0], []))
    plan = make_plan(300.0, declared(), [0], ["memtest"])
    assert_holds(plan)
    phases = by_name(plan)
    assert phases["memtest"].skipped == "--skip memtest"
    assert phases["memtest"].seconds == 0.0 and phases["memtest"].gpus == ()
    assert phases["soak"].seconds == pytest.approx(whole["soak"].seconds + 24.0)


def test_a_multi_gpu_phase_is_not_applicable_on_one_gpu() -> None:
    phases = [*declared(), PhaseShare("multigpu", 0.05, MODULE, cooldown_s=5.0, multi_gpu=True)]
    one = by_name(make_plan(300.0, phases, [3], []))
    assert one["multigpu"].skipped == "not applicable: one GPU"
    two = by_name(make_plan(300.0, phases, [0, 1], []))
    assert two["multigpu"].skipped is None and two["multigpu"].gpus == (0, 1)
    assert_holds(make_plan(300.0, phases, [0, 1], []))


def test_two_phases_taking_the_remainder_share_it() -> None:
    """A plugin's phase may also ask for "what is left": two such phases split it, rather
    than each taking all of it and running past the budget."""
    phases = [*declared(), PhaseShare("burn", None, "plugin.burn")]
    plan = make_plan(300.0, phases, [0], [])
    assert_holds(plan)
    assert by_name(plan)["burn"].seconds == pytest.approx(by_name(plan)["soak"].seconds)


def test_the_phase_keeps_its_declared_module_and_start_allowance() -> None:
    phases = [PhaseShare("burn", 0.2, "plugin.burn", startup_s=7.0)]
    (phase,) = make_plan(100.0, phases, [0], []).phases
    assert phase.module == "plugin.burn" and phase.startup_s == 7.0
    assert phase.work_s == pytest.approx(20.0 - 7.0)


def test_the_printed_plan() -> None:
    plan = make_plan(300.0, declared(), [0, 1], ["bandwidth"])
    assert plan.lines() == [
        "sitscheck accept: plan for 300 s",
        "  passive    all GPUs     12 s  (idle baseline)",
        "  memtest    GPUs 0,1     24 s",
        "  compute    GPUs 0,1     30 s",
        "  soak       GPUs 0,1    184 s after 5 s cooldown",
        "  bandwidth  skipped: --skip bandwidth",
        "  multigpu   GPUs 0,1     30 s",
        "  report                  15 s",
    ]


def test_the_printed_plan_without_gpus_says_so() -> None:
    """No GPU seen (no NVML): the plan says no phase has a GPU to load."""
    lines = make_plan(300.0, declared(), [], []).lines()
    assert lines[2] == "  memtest    no GPU to load"
    # how many GPUs the node has is not known: the multi-GPU phase is not run (UNKNOWN), never
    # "not applicable: one GPU" (SKIPPED)
    assert lines[-2] == "  multigpu   no GPU to load"


SHARES = st.one_of(st.none(), st.floats(0.01, 0.6))


@st.composite
def phase_lists(draw: st.DrawFn) -> list[PhaseShare]:
    count = draw(st.integers(1, 7))
    return [
        PhaseShare(
            f"p{i}",
            draw(SHARES),
            MODULE,
            cooldown_s=draw(st.floats(0.0, 40.0)),
            multi_gpu=draw(st.booleans()),
            startup_s=draw(st.floats(0.0, 30.0)),
        )
        for i in range(count)
    ]


@settings(max_examples=400, deadline=None)
@given(
    budget=st.floats(MIN_BUDGET_S, 7200.0),
    phases=phase_lists(),
    gpus=st.integers(0, 8),
    skip=st.sets(st.sampled_from([f"p{i}" for i in range(7)])),
)
def test_the_last_phase_always_ends_by_the_budget_less_the_report(
    budget: float, phases: list[PhaseShare], gpus: int, skip: set[str]
) -> None:
    plan = make_plan(budget, phases, list(range(gpus)), sorted(skip))
    assert_holds(plan)
    assert [p.name for p in plan.phases] == [p.name for p in phases]
    for share, planned in zip(phases, plan.phases, strict=True):
        left_out = share.name in skip or (share.multi_gpu and gpus == 1)
        assert (planned.skipped is not None) == left_out
