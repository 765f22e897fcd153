"""The shipped rules over the facts of five real acceptance runs on an H200 (tests/accept/data/
h200-runs-facts.json, README.md there): a healthy H200 at its 700 W cap, the SW power cap set
and the SM clock at 1,440-1,530 MHz, is no fault; the PTX engine is judged against its own
reference; a 5 s soak's warm-up slope is no trend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sitscheck.engine.cel import CelEnvironment
from sitscheck.engine.evaluate import evaluate_rules
from sitscheck.engine.loader import builtin_rules_dir, load_profiles, load_rules
from sitscheck.models import CheckResult, Status, Verdict

RUNS: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parent / "data" / "h200-runs-facts.json").read_text()
)
ACCEPTANCE = ("soak.", "compute.", "straggler.")


def _verdicts(facts: dict[str, Any], profile: str = "h200-sxm") -> list[Verdict]:
    env = CelEnvironment()
    ruleset = load_rules(sorted(builtin_rules_dir().glob("*.yaml")), env)
    results = [CheckResult(name=name, status=Status.OK, facts=f) for name, f in facts.items()]
    return evaluate_rules(ruleset, results, load_profiles([])[profile], env)


def _fired(verdicts: list[Verdict]) -> list[tuple[str, str]]:
    return sorted(
        (v.rule, v.status.value)
        for v in verdicts
        if v.rule.startswith(ACCEPTANCE) and v.status in (Status.WARNING, Status.CRITICAL)
    )


@pytest.mark.parametrize("run", ["a1", "a2"])
def test_the_real_runs_figures_are_quiet(run: str) -> None:
    verdicts = _verdicts(RUNS[run])
    assert _fired(verdicts) == []
    unjudged = {v.rule for v in verdicts if v.rule.startswith(ACCEPTANCE) and v.reason}
    # without a bandwidth check in the facts only its stragglers are skipped
    assert unjudged == {f"straggler.{f}{s}" for f in ("hbm_bandwidth", "h2d_bandwidth")
                        for s in ("", "_critical")}  # fmt: skip


@pytest.mark.parametrize("run", ["default-1", "default-2", "default-3"])
def test_three_default_runs_in_a_row_are_quiet_and_fully_judged(run: str) -> None:
    """The three default runs of docs/ACCEPTANCE.md, bandwidth included: no rule above ok,
    and every acceptance rule judged (none left with a reason)."""
    verdicts = _verdicts(RUNS[run])
    assert _fired(verdicts) == []
    assert {v.rule for v in verdicts if v.rule.startswith(ACCEPTANCE) and v.reason} == set()
    soak = RUNS[run]["soak"]["gpus"][0]
    assert soak["reasons_s"]["sw_power_cap"] > 0.9 * soak["seconds"]


def test_the_healthy_soak_is_at_its_cap_not_held_back() -> None:
    gpu = RUNS["a1"]["soak"]["gpus"][0]
    assert gpu["reasons_s"]["sw_power_cap"] > 0 and gpu["power_w"]["median"] > 680
    assert 1440 <= gpu["sm_clock_mhz"]["median"] <= 1530
    assert RUNS["a1"]["gpu_telemetry"]["gpus"][0]["sm_clock_max_mhz"] == 1980.0


def test_ptx_figures_against_pytorchs_reference_would_be_critical() -> None:
    """The reference is the engine's: a2's 274 TFLOP/s are healthy for PTX, and below 0.75 of
    what PyTorch reaches on the same GPU."""
    facts = json.loads(json.dumps(RUNS["a2"]))
    for name in ("compute", "soak"):
        facts[name]["engine"] = "torch"
    assert _fired(_verdicts(facts)) == [
        ("compute.tflops_low", "critical"),
        ("soak.tflops_low", "critical"),
    ]


def test_the_real_runs_share_of_the_peak() -> None:
    [info] = [v for v in _verdicts(RUNS["a1"]) if v.rule == "soak.tflops_of_peak" and v.device]
    assert info.message == (
        "GPU 0: 671.8 TFLOP/s sustained (torch), 67.9 % of the 989 TFLOP/s dense bf16 peak"
    )
