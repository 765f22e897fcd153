"""rules/gpu-health.yaml at its thresholds: each rule fires just past its number, not before.

The facts are synthetic (the shapes the checks report); only this rule file is loaded, so other
rule files do not move the results.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from sitscheck.engine.cel import CelEnvironment
from sitscheck.engine.evaluate import evaluate_rules
from sitscheck.engine.loader import builtin_rules_dir, load_rules
from sitscheck.engine.model import Profile
from sitscheck.models import CheckResult, Status, Verdict

# The shipped copy (what an installed sitscheck loads as built-in rules, params included).
RULES = builtin_rules_dir() / "gpu-health.yaml"
ENV = CelEnvironment()
RULESET = load_rules([RULES], ENV)


def _stats(value: float) -> dict[str, float]:
    return {"min": value, "mean": value, "p95": value, "max": value}


IDLE_H200: dict[str, dict[str, Any]] = {
    "gpu_telemetry": {
        "util_gpu_pct": _stats(0.0),
        "power_w": _stats(78.6),
        "power_limit_w": 700.0,
        "temp_c": _stats(33.0),
        "mem_temp_c": _stats(36.0),
        "temp_slowdown_c": 89.0,
        "temp_mem_max_c": 95.0,
        "sm_clock_mhz": _stats(345.0),
        "clock_reasons": {
            "gpu_idle": 1.0,
            "sw_power_cap": 0.0,
            "hw_slowdown": 0.0,
            "hw_thermal_slowdown": 0.0,
            "hw_power_brake_slowdown": 0.0,
        },
    },
    "pcie_link": {
        "gen_current": 5,
        "gen_max": 5,
        "gen_below_max": False,
        "replay_count": 2,
        "replay_delta": 0,
        "replay_per_min": 0.0,
        "replay_window_s": 3.0,
    },
    "memory_errors": {
        "ecc_volatile_uncorrected": 0,
        "retired_sbe": 0,
        "retired_dbe": 0,
        "remap_histogram": {"max": 3072, "none": 0},
    },
    "nvlink": {"links_reported": 18, "links_active": 18},
}


def _busy(facts: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    busy = copy.deepcopy(facts)
    busy["gpu_telemetry"].update(
        util_gpu_pct=_stats(95.0),
        power_w=_stats(693.0),
        clock_reasons={**busy["gpu_telemetry"]["clock_reasons"], "gpu_idle": 0.0},
    )
    return busy


def evaluate(
    facts: dict[str, dict[str, Any]],
    profile: dict[str, Any] | None = None,
    site: dict[str, Any] | None = None,
) -> list[Verdict]:
    results = [
        CheckResult(
            name=check,
            status=Status.OK,
            facts={"gpus": [{"index": 0, "pci_bus_id": "0000:00:06.0", **values}]},
        )
        for check, values in facts.items()
    ]
    ruleset = RULESET
    if site:
        ruleset = type(RULESET)(RULESET.rules, RULESET.params, site)
    chosen = Profile("test", "test.yaml", profile, {}) if profile is not None else None
    return evaluate_rules(ruleset, results, chosen, ENV)


def fired(verdicts: list[Verdict]) -> list[str]:
    return sorted(v.rule for v in verdicts if v.status not in (Status.OK, Status.SKIPPED))


def test_idle_and_busy_h200_fire_nothing() -> None:
    profile = {"tdp_w": 700, "nvlink": {"links": 18}}
    for facts in (IDLE_H200, _busy(IDLE_H200)):
        verdicts = evaluate(facts, profile)
        assert fired(verdicts) == []
        assert not [v for v in verdicts if v.status == Status.UNKNOWN]


def test_every_number_is_a_param() -> None:
    params = RULESET.params
    for name in (
        "busy_util_pct",
        "pcie_replay_budget_per_min_gen4",
        "pcie_replay_budget_per_min_gen5",
        "power_over_limit_ratio",
        "temp_slowdown_fallback_c",
    ):
        assert name in params, name
    assert params["pcie_replay_budget_per_min_gen4"] == 16
    assert params["pcie_replay_budget_per_min_gen5"] == 31
    assert params["power_over_limit_ratio"] == 1.2
    assert params["temp_slowdown_fallback_c"] == 83
    for rule in RULESET.rules:
        assert (rule.source and rule.action) or rule.severity.value == "info", rule.id


def _with(base: dict[str, dict[str, Any]], check: str, **values: Any) -> dict[str, Any]:
    facts = copy.deepcopy(base)
    facts[check].update(values)
    return facts


BUSY = _busy(IDLE_H200)
CASES = [
    # (name, facts, the rules that fire)
    ("gen below max, busy", _with(BUSY, "pcie_link", gen_current=4, gen_below_max=True),
     ["pcie_link.gen_below_max_busy"]),
    ("gen below max, idle: info only", _with(IDLE_H200, "pcie_link", gen_below_max=True), []),
    ("replays at the gen5 budget", _with(IDLE_H200, "pcie_link", replay_delta=2,
     replay_per_min=31.0), []),
    ("replays past the gen5 budget", _with(IDLE_H200, "pcie_link", replay_delta=2,
     replay_per_min=31.5), ["pcie_link.replay_rate"]),
    ("gen4 budget is lower", _with(IDLE_H200, "pcie_link", gen_max=4, replay_delta=2,
     replay_per_min=20.0), ["pcie_link.replay_rate"]),
    ("one replay is not a rate", _with(IDLE_H200, "pcie_link", replay_delta=1,
     replay_per_min=20.0), []),
    ("HW slowdown while busy", _with(BUSY, "gpu_telemetry", clock_reasons={
        **BUSY["gpu_telemetry"]["clock_reasons"], "hw_slowdown": 0.08}),
     ["gpu_telemetry.hw_slowdown_busy"]),
    ("power brake while busy", _with(BUSY, "gpu_telemetry", clock_reasons={
        **BUSY["gpu_telemetry"]["clock_reasons"], "hw_power_brake_slowdown": 1.0}),
     ["gpu_telemetry.hw_slowdown_busy"]),
    ("HW thermal while idle", _with(IDLE_H200, "gpu_telemetry", clock_reasons={
        **IDLE_H200["gpu_telemetry"]["clock_reasons"], "hw_thermal_slowdown": 1.0}), []),
    ("SW power cap while busy", _with(BUSY, "gpu_telemetry", clock_reasons={
        **BUSY["gpu_telemetry"]["clock_reasons"], "sw_power_cap": 1.0}), []),
    ("just under NVML slowdown", _with(IDLE_H200, "gpu_telemetry", temp_c=_stats(88.0)), []),
    ("at NVML slowdown", _with(IDLE_H200, "gpu_telemetry", temp_c=_stats(89.0)),
     ["gpu_telemetry.temp_at_slowdown"]),
    ("HBM at its max", _with(IDLE_H200, "gpu_telemetry", mem_temp_c=_stats(95.0)),
     ["gpu_telemetry.mem_temp_at_max"]),
    ("0 W while busy", _with(BUSY, "gpu_telemetry", power_w=_stats(0.0)),
     ["gpu_telemetry.power_zero_busy"]),
    ("0 W while idle", _with(IDLE_H200, "gpu_telemetry", power_w=_stats(0.0)), []),
    ("20 % over the limit", _with(IDLE_H200, "gpu_telemetry", power_w=_stats(840.0)), []),
    ("past 20 % over", _with(IDLE_H200, "gpu_telemetry", power_w=_stats(841.0)),
     ["gpu_telemetry.power_over_limit"]),
    ("busy at half the TDP", _with(BUSY, "gpu_telemetry", power_w=_stats(350.0)), []),
    ("busy under half the TDP", _with(BUSY, "gpu_telemetry", power_w=_stats(349.0)),
     ["gpu_telemetry.power_low_busy"]),
    ("a volatile DBE", _with(IDLE_H200, "memory_errors", ecc_volatile_uncorrected=1),
     ["memory_errors.ecc_volatile_uncorrected"]),
    ("62 retired pages", _with(IDLE_H200, "memory_errors", retired_sbe=50, retired_dbe=12), []),
    ("63 retired pages", _with(IDLE_H200, "memory_errors", retired_sbe=50, retired_dbe=13),
     ["memory_errors.retired_pages_limit"]),
    ("a bank out of spare rows", _with(IDLE_H200, "memory_errors",
     remap_histogram={"max": 3071, "none": 1}), ["memory_errors.remap_banks_exhausted"]),
    ("fewer NVLinks than the profile", _with(IDLE_H200, "nvlink", links_reported=12,
     links_active=12), ["nvlink.links_below_profile"]),
    ("CRC data as a loaded H200", _with(IDLE_H200, "nvlink", errors_per_s={
        "replay": 0.0, "recovery": 0.0, "crc_flit": 0.0, "crc_data": 15.2}), []),
    ("CRC data at DCGM's 100/s", _with(IDLE_H200, "nvlink", errors_per_s={
        "replay": 0.0, "recovery": 0.0, "crc_flit": 0.0, "crc_data": 100.0}),
     ["nvlink.crc_rate"]),
    ("CRC flit past 100/s", _with(IDLE_H200, "nvlink", errors_per_s={
        "replay": 0.0, "recovery": 0.0, "crc_flit": 120.0, "crc_data": 1.0}),
     ["nvlink.crc_rate"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "facts", "expected"), CASES, ids=[c[0] for c in CASES])
def test_threshold(name: str, facts: dict[str, Any], expected: list[str]) -> None:
    verdicts = evaluate(facts, {"tdp_w": 700, "nvlink": {"links": 18}})
    assert fired(verdicts) == expected
    for verdict in verdicts:
        if verdict.rule in expected:
            assert verdict.device is not None and verdict.device.index == 0
            assert verdict.action and "?" not in verdict.message, verdict.message


def test_idle_generation_is_said_to_be_not_judged() -> None:
    verdicts = evaluate(_with(IDLE_H200, "pcie_link", gen_current=1, gen_below_max=True))
    (note,) = [v for v in verdicts if v.rule == "pcie_link.gen_not_judged_idle"]
    assert note.status == Status.OK  # severity info: shown, never worse than ok
    assert "not judged: GPU idle" in note.message and "Gen1 of Gen5" in note.message


def test_busy_only_judgements_say_so_on_an_idle_gpu() -> None:
    (idle,) = [v for v in evaluate(IDLE_H200) if v.rule == "gpu_telemetry.idle_not_judged"]
    assert idle.status == Status.OK and idle.device is not None
    assert idle.message.startswith("GPU 0: not judged: GPU idle (0 % mean utilization")
    (busy,) = [v for v in evaluate(BUSY) if v.rule == "gpu_telemetry.idle_not_judged"]
    assert busy.device is None  # the rule's plain ok: nothing was left unjudged


def test_temperature_fallbacks_nvml_then_profile_then_param() -> None:
    no_threshold = copy.deepcopy(IDLE_H200)
    del no_threshold["gpu_telemetry"]["temp_slowdown_c"]
    no_threshold["gpu_telemetry"]["temp_c"] = _stats(84.0)
    assert fired(evaluate(no_threshold)) == ["gpu_telemetry.temp_at_slowdown"]  # 83 °C param
    assert fired(evaluate(no_threshold, {"slowdown_c": 87})) == []  # the profile's 87 °C
    no_threshold["gpu_telemetry"]["temp_c"] = _stats(82.9)
    assert fired(evaluate(no_threshold)) == []


def test_power_low_uses_the_profile_tdp_over_the_enforced_limit() -> None:
    capped = _with(BUSY, "gpu_telemetry", power_limit_w=500.0, power_w=_stats(300.0))
    assert fired(evaluate(capped)) == []  # 300 W of a 500 W cap: 60 %
    assert fired(evaluate(capped, {"tdp_w": 700})) == ["gpu_telemetry.power_low_busy"]


def test_a_site_can_override_any_number() -> None:
    facts = _with(BUSY, "gpu_telemetry", util_gpu_pct=_stats(70.0), power_w=_stats(0.0))
    assert fired(evaluate(facts)) == []  # 70 % is not busy by default (80 %)
    assert fired(evaluate(facts, site={"busy_util_pct": 60})) == ["gpu_telemetry.power_zero_busy"]


def test_missing_facts_do_not_fire_and_are_not_unknown() -> None:
    """What a check could not read it lists in not_judged; the rules that need it stay out."""
    sparse = {"gpu_telemetry": {"util_gpu_pct": _stats(100.0), "temp_c": _stats(30.0)}}
    verdicts = evaluate(sparse)
    assert fired(verdicts) == []
    assert not [v for v in verdicts if v.status == Status.UNKNOWN]


def test_rule_file_validates(tmp_path: Path) -> None:
    assert {r.id.split(".")[0] for r in RULESET.rules} == {
        "pcie_link",
        "gpu_telemetry",
        "memory_errors",
        "nvlink",
    }
    assert all(r.scope == "gpu" for r in RULESET.rules)
