"""Acceptance records replayed through the CLI (`sitscheck run --from`): facts and verdicts.

The healthy records are one real H200's figures (tests/accept/data/make_records.py); each
fault is a small edit of them (accept_bundles). The facts are checked against facts.md's
exact keys; every acceptance rule fires on its fault and stays quiet on the healthy node.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from accept_bundles import (
    LOAD_STARTED_S,
    check,
    edit,
    edit_result,
    findings,
    fired,
    one_gpu,
    read,
    replay,
    write,
)
from accept_facts import COMPUTE_KEYS as COMPUTE
from accept_facts import ECC_KEYS as ECC
from accept_facts import MEMTEST_KEYS as MEMTEST
from accept_facts import SOAK_KEYS as SOAK
from accept_facts import SOAK_OBJECTS as SOAK_NESTED

ACCEPT_RULES = ("soak.", "compute.", "straggler.")
SCHEMA = Path(__file__).resolve().parents[2] / "schema"


def _accept(report: dict[str, Any]) -> list[tuple[str, str, int | None]]:
    return [v for v in fired(report) if v[0].startswith(ACCEPT_RULES)]


def _message(report: dict[str, Any], rule: str) -> str:
    messages = [v["message"] for v in report["verdicts"] if v["rule"] == rule and v["device"]]
    assert len(messages) == 1, (rule, messages)
    return str(messages[0])


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any]]:
    return replay(one_gpu(tmp_path_factory.mktemp("healthy")))


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    return one_gpu(tmp_path)


def soak_samples(bundle: Path, change: Callable[[float, dict[str, Any]], None]) -> None:
    """`change(load_t, sample)` for every soak sample taken under load (load_t: seconds into it)."""
    data = read(bundle, "soak")
    for sample in data["gpus"][0]["result"]["samples"]:
        load_t = sample["t"] - LOAD_STARTED_S
        if 0 <= load_t <= data["gpus"][0]["result"]["seconds"]:
            change(load_t, sample)
    write(bundle, "soak", data)


def soak_times(bundle: Path, change: Callable[[list[float]], list[float]]) -> None:
    data = read(bundle, "soak")
    res = data["gpus"][0]["result"]
    res["times"] = [[t, change(values)] for t, values in res["times"]]
    write(bundle, "soak", data)


# ---------------------------------------------------------------- the healthy node


def test_healthy_h200_is_quiet(healthy: tuple[int, dict[str, Any]]) -> None:
    """A1's figures (687 TFLOP/s compute, 664 soak at 691 W of 700 under the SW power cap,
    SM 1,440-1,530 MHz, 61 °C): no finding and no verdict above ok, every phase judged."""
    code, report = healthy
    assert (code, report["status"]) == (0, "ok"), report["headline"]
    assert findings(report) == [] and fired(report) == []
    for name in ("memtest", "compute", "soak"):
        assert check(report, name)["status"] == "ok"
        assert check(report, name)["error"] is None


def test_healthy_facts_have_exactly_the_facts_md_keys(healthy: tuple[int, dict[str, Any]]) -> None:
    _, report = healthy
    memtest, compute, soak = (check(report, n)["facts"] for n in ("memtest", "compute", "soak"))
    assert (memtest["engine"], compute["engine"], soak["engine"]) == ("ptx", "torch", "torch")
    for facts in (memtest, compute, soak):
        assert set(facts) == {"engine", "gpus"} and len(facts["gpus"]) == 1
    assert set(memtest["gpus"][0]) == MEMTEST
    assert set(memtest["gpus"][0]["ecc_before"]) == set(memtest["gpus"][0]["ecc_after"]) == ECC
    assert set(compute["gpus"][0]) == COMPUTE
    gpu = soak["gpus"][0]
    assert set(gpu) == SOAK
    for key, inner in SOAK_NESTED.items():
        assert set(gpu[key]) == inner, key
    assert compute["gpus"][0]["mismatched_repeats"] == []  # the repeats themselves: none
    assert gpu["uuid"] == compute["gpus"][0]["uuid"] == memtest["gpus"][0]["uuid"]


def test_healthy_soak_facts(healthy: tuple[int, dict[str, Any]]) -> None:
    """The statistics over the load: the idle samples before it and the tail after it are
    left out (no gpu_idle second, 121 samples for 120 s), the boost second before the cap is
    outside the steady state (which starts at the 5 s warm-up)."""
    _, report = healthy
    gpu = check(report, "soak")["facts"]["gpus"][0]
    assert gpu["seconds"] == 120.0 and gpu["samples"] == 121
    assert gpu["steady_from_s"] == 5.0
    assert gpu["reasons_s"]["sw_power_cap"] == 119.0
    assert sum(gpu["reasons_s"].values()) == 119.0  # nothing else, not even gpu_idle
    assert gpu["power_limit_w"] == 700.0
    assert 687.0 <= gpu["power_w"]["p5"] <= gpu["power_w"]["median"] <= 696.0
    assert gpu["sm_clock_mhz"]["min"] == 1440.0 and gpu["sm_clock_mhz"]["median"] <= 1530.0
    assert gpu["temp_c"] == {"max": 61.0, "slope_last30_c_per_min": 0.0}
    assert gpu["memory_temp_c"] == {"max": 53.0}
    assert gpu["iteration_ms"]["p50"] == 1.656 and gpu["iteration_ms"]["p99"] == 1.693
    assert 0 < gpu["iteration_ms"]["cv"] < 0.02
    assert 663.0 < gpu["tflops"]["median"] < 665.0  # quick-check.md: 664
    assert gpu["tflops"]["p1"] < gpu["tflops"]["median"]


def test_acceptance_reports_validate_against_the_published_schemas(
    healthy: tuple[int, dict[str, Any]], bundle: Path
) -> None:
    """The report (schema/report.schema.json) and each check's facts (schema/facts/)."""
    edit(bundle, "soak", 0, status="hung", reason="stopped responding; killed", result=None)
    edit_result(bundle, "compute", 0, mismatched=[3])
    for report in (healthy[1], replay(bundle)[1]):
        jsonschema.Draft202012Validator(_schema("report.schema.json")).validate(report)
        for name in ("memtest", "compute", "soak"):
            facts = _schema(f"facts/{name}.schema.json")
            jsonschema.Draft202012Validator(facts).validate(check(report, name)["facts"])


def _schema(name: str) -> Any:
    return json.loads((SCHEMA / name).read_text())


def test_the_soaks_trace_is_timed_from_the_start_of_the_load(
    healthy: tuple[int, dict[str, Any]],
) -> None:
    """The samples on the iteration times' clock (the sampler started 3 s before the load):
    the idle samples before the load and the tail after it are not drawn."""
    _, report = healthy
    [series] = check(report, "soak")["series"]
    lines = {line["name"]: line for line in series["lines"]}
    clock = lines["sm_clock_mhz"]
    assert clock["t"][0] == 0.0 and clock["t"][-1] == 120.0
    assert 345.0 not in clock["values"] and 131.2 not in lines["power_w"]["values"]
    assert lines["iteration_ms"]["t"][0] == 1.0
    assert [m["t"] for m in series["moments"]] == [5.0]


def test_healthy_shows_its_share_of_the_peak(healthy: tuple[int, dict[str, Any]]) -> None:
    _, report = healthy
    [info] = [v for v in report["verdicts"] if v["rule"] == "soak.tflops_of_peak"]
    assert info["status"] == "ok" and info["device"]["index"] == 0
    assert "67.1 % of the 989 TFLOP/s dense bf16 peak" in info["message"]


def test_no_peak_share_without_the_profile_key(bundle: Path) -> None:
    _, report = replay(bundle, "--profile", "a100-sxm-80gb")
    [verdict] = [v for v in report["verdicts"] if v["rule"] == "soak.tflops_of_peak"]
    assert verdict["status"] == "skipped" or verdict["device"] is None


# ---------------------------------------------------------------- the checks' own findings


def test_bad_word_is_critical_naming_gpu_address_and_values(bundle: Path) -> None:
    bad = {
        "address": 140090836779008,
        "expected": "0x9887860f1ac14340",
        "read": "0x0badf00ddeadbeef",
    }  # fmt: skip  (a2: the injected word on the H200)
    edit_result(bundle, "memtest", 0, bad_words=1, first_bad=bad)
    code, report = replay(bundle)
    assert code == 2 and findings(report) == [("memtest.bad_words", "critical", 0)]
    message = check(report, "memtest")["findings"][0]["message"]
    assert message.startswith("GPU 0: 1 bad word(s)")
    assert "0x7f6970900000" in message and "expected 0x9887860f1ac14340" in message
    assert "read 0x0badf00ddeadbeef" in message
    assert check(report, "memtest")["facts"]["gpus"][0]["first_bad"] == bad


def test_mismatched_repeat_is_silent_data_corruption(bundle: Path) -> None:
    edit_result(bundle, "compute", 0, mismatched=[3])
    code, report = replay(bundle)
    assert code == 2 and findings(report) == [("compute.repeat_mismatch", "critical", 0)]
    message = check(report, "compute")["findings"][0]["message"]
    assert "silent data corruption suspected" in message and "repeat(s) 3 of 71" in message
    assert check(report, "compute")["facts"]["gpus"][0]["mismatched_repeats"] == [3]


def test_a_tile_of_nan_is_corruption(bundle: Path) -> None:
    """A product holding NaN gives a NaN error (Python's json writes it, reads it back): never
    within tolerance."""
    path = bundle / "accept" / "compute.json"
    real = '"reference_max_rel_error": 0.003881445523748192'
    path.write_text(path.read_text().replace(real, '"reference_max_rel_error": NaN'))
    code, report = replay(bundle)
    assert code == 2 and findings(report) == [("compute.reference_error", "critical", 0)]
    assert check(report, "compute")["facts"]["gpus"][0]["reference_max_rel_error"] is None


def test_hung_soak_is_critical_with_what_it_was_doing(bundle: Path) -> None:
    why = "stopped responding while soak: full load; killed"
    edit(bundle, "soak", 0, status="hung", reason=why, doing="soak: full load", result=None)
    code, report = replay(bundle)
    assert code == 2 and check(report, "soak")["status"] == "critical"
    assert findings(report) == [("soak.workload_hung", "critical", 0)]
    assert check(report, "soak")["findings"][0]["message"] == f"GPU 0: the soak workload {why}"


def test_failed_child_is_unknown_with_its_reason(bundle: Path) -> None:
    why = "the workload exited with exit code 1 before its result, while compute: repeat 4"
    edit(bundle, "compute", 0, status="failed", reason=why, result=None)
    code, report = replay(bundle)
    assert code == 3 and report["status"] == "unknown"
    assert check(report, "compute")["status"] == "unknown"
    assert why in check(report, "compute")["error"]
    statuses = {v["rule"]: v["status"] for v in report["verdicts"] if v["rule"].startswith("comp")}
    assert statuses == {"compute.tflops_low": "unknown"}


def test_interrupted_phase_is_unknown(bundle: Path) -> None:
    why = "stopped by a signal while soak: full load"
    edit(bundle, "soak", 0, status="interrupted", reason=why)
    code, report = replay(bundle)
    assert code == 3 and check(report, "soak")["status"] == "unknown"
    assert f"GPU 0: interrupted: {why}" in check(report, "soak")["error"]


def test_a_gpu_left_out_for_a_critical_passive_finding_is_unknown(bundle: Path) -> None:
    why = "not run: xid.79 (critical) before the phase: GPU has fallen off the bus"
    edit(bundle, "memtest", 0, status="not_run", reason=why, result=None)
    code, report = replay(bundle)
    assert code == 3 and check(report, "memtest")["status"] == "unknown"
    assert why in check(report, "memtest")["error"]


def test_skipped_memtest_is_skipped_and_named_in_the_headline(bundle: Path) -> None:
    data = read(bundle, "memtest")
    write(bundle, "memtest", {**data, "engine": None, "skipped": "--skip memtest", "gpus": []})
    code, report = replay(bundle)
    assert code == 0 and check(report, "memtest")["status"] == "skipped"
    assert check(report, "memtest")["skip_reason"] == "--skip memtest"
    assert "accepted without memtest" in report["headline"]
    memtest_rules = [v for v in report["verdicts"] if v["rule"].startswith("straggler.memtest")]
    assert {v["status"] for v in memtest_rules} == {"skipped"}


# ---------------------------------------------------------------- soak rules


@pytest.mark.parametrize(
    ("bit", "name"),
    [(0x8, "hw_slowdown"), (0x40, "hw_thermal_slowdown"), (0x80, "hw_power_brake_slowdown")],
)
def test_hardware_slowdown_for_20_s_mid_soak_is_critical(bundle: Path, bit: int, name: str) -> None:
    """20 s of slowdown in the middle of the soak: the clocks halve and the power drops, so
    those seconds are outside the steady state; the reasons still count them."""

    def slow(load_t: float, sample: dict[str, Any]) -> None:
        if 50 <= load_t < 70:
            sample.update(sm_clock_mhz=990, power_w=452.0, clock_event_reasons=bit | 0x4)

    soak_samples(bundle, slow)
    code, report = replay(bundle)
    assert code == 2
    assert ("soak.hw_slowdown", "critical", 0) in _accept(report)
    gpu = check(report, "soak")["facts"]["gpus"][0]
    assert gpu["reasons_s"][name] == 20.0
    assert f"{20} s" in _message(report, "soak.hw_slowdown")
    assert gpu["steady_from_s"] is not None and gpu["steady_from_s"] >= 70


def test_one_second_of_power_brake_is_enough(bundle: Path) -> None:
    soak_samples(bundle, lambda t, s: s.update(clock_event_reasons=0x84) if t == 100 else None)
    _, report = replay(bundle)
    assert _accept(report) == [("soak.hw_slowdown", "critical", 0)]


def test_hardware_slowdown_while_idle_before_the_load_is_not_the_soak(bundle: Path) -> None:
    data = read(bundle, "soak")
    data["gpus"][0]["result"]["samples"][0]["clock_event_reasons"] = 0x9
    write(bundle, "soak", data)
    _, report = replay(bundle)
    assert _accept(report) == []


def _scale_times(factor: float) -> Callable[[list[float]], list[float]]:
    return lambda values: [round(v / factor, 4) for v in values]


def test_soak_below_three_quarters_of_the_reference_is_critical(bundle: Path) -> None:
    soak_times(bundle, _scale_times(0.70))  # 664 -> 465 TFLOP/s, below 0.75 × 664 = 498
    code, report = replay(bundle)
    assert code == 2 and _accept(report) == [("soak.tflops_low", "critical", 0)]
    message = _message(report, "soak.tflops_low")
    assert "464.6 TFLOP/s" in message and "torch" in message and "664 TFLOP/s" in message


def test_soak_just_above_three_quarters_is_quiet(bundle: Path) -> None:
    soak_times(bundle, _scale_times(0.76))
    _, report = replay(bundle)
    assert _accept(report) == []


def test_ptx_engine_is_judged_against_its_own_reference(bundle: Path) -> None:
    """a2's PTX figures (compute 274.2, soak 265.5 TFLOP/s) are healthy for PTX (reference
    270), though far below PyTorch's 664."""
    for phase in ("compute", "soak"):
        data = read(bundle, phase)
        data["engine"] = "ptx"
        write(bundle, phase, data)
    edit_result(bundle, "compute", 0, engine="ptx", tflops_median=274.2)
    soak_times(bundle, _scale_times(265.5 / 663.76))
    _, report = replay(bundle)
    assert _accept(report) == []
    edit_result(bundle, "compute", 0, tflops_median=190.0)
    _, report = replay(bundle)
    assert _accept(report) == [("compute.tflops_low", "critical", 0)]


def test_an_engine_without_a_reference_is_not_judged(bundle: Path) -> None:
    data = read(bundle, "soak")
    data["engine"] = "cutlass"
    write(bundle, "soak", data)
    soak_times(bundle, _scale_times(0.5))
    _, report = replay(bundle)
    assert _accept(report) == []


def test_a_profile_without_references_judges_no_tflops(bundle: Path) -> None:
    soak_times(bundle, _scale_times(0.5))
    edit_result(bundle, "compute", 0, tflops_median=300.0)
    _, h100 = replay(bundle, "--profile", "h100-sxm")
    assert _accept(h100) == []
    _, h200 = replay(bundle)
    both = [("compute.tflops_low", "critical", 0), ("soak.tflops_low", "critical", 0)]
    assert _accept(h200) == both


def test_compute_below_three_quarters_is_critical(bundle: Path) -> None:
    edit_result(bundle, "compute", 0, tflops_median=497.0)
    _, report = replay(bundle)
    assert _accept(report) == [("compute.tflops_low", "critical", 0)]
    message = _message(report, "compute.tflops_low")
    assert "497 TFLOP/s (bf16 GEMM, torch) in the compute screen" in message
    edit_result(bundle, "compute", 0, tflops_median=499.0)
    _, report = replay(bundle)
    assert _accept(report) == []


@pytest.mark.parametrize(("peak", "expected"), [(83, "warning"), (84, "warning"), (82, None)])
def test_temperature_at_the_seeds_scaling_point(
    bundle: Path, peak: int, expected: str | None
) -> None:
    soak_samples(bundle, lambda t, s: s.update(temp_c=peak) if t == 90 else None)
    _, report = replay(bundle)
    assert _accept(report) == ([("soak.temp_high", expected, 0)] if expected else [])
    assert check(report, "soak")["facts"]["gpus"][0]["temp_c"]["max"] == max(peak, 61)


def _rising(load_t: float, sample: dict[str, Any]) -> None:
    if load_t >= 90:
        sample["temp_c"] = 60 + int((load_t - 90) / 5)  # 1 °C every 5 s: 12 °C/min


def test_temperature_still_rising_at_the_end_is_a_warning(bundle: Path) -> None:
    soak_samples(bundle, _rising)
    _, report = replay(bundle)
    assert _accept(report) == [("soak.temp_rising", "warning", 0)]
    slope = check(report, "soak")["facts"]["gpus"][0]["temp_c"]["slope_last30_c_per_min"]
    assert 10.0 < slope < 14.0


def test_one_degree_step_at_the_end_is_not_rising(bundle: Path) -> None:
    soak_samples(bundle, lambda t, s: s.update(temp_c=61 if t >= 105 else 60) if t >= 90 else None)
    _, report = replay(bundle)
    assert _accept(report) == []


def test_a_short_soak_judges_no_trend(bundle: Path) -> None:
    """A soak of 40 s (a1's was 39 s, a2's 5 s: 200 °C/min while warming up) is too short."""
    soak_samples(bundle, _rising)
    data = read(bundle, "soak")
    res = data["gpus"][0]["result"]
    res["load_started_s"] = LOAD_STARTED_S + res["seconds"] - 40.0  # the last 40 s of it
    res["seconds"] = 40.0
    res["times"] = [[t, values] for t, values in res["times"] if t <= 40.0]
    write(bundle, "soak", data)
    _, report = replay(bundle)
    gpu = check(report, "soak")["facts"]["gpus"][0]
    assert gpu["temp_c"]["slope_last30_c_per_min"] > 6 and gpu["seconds"] == 40.0
    assert _accept(report) == []


def test_iteration_jitter_above_the_profiles_bound(bundle: Path) -> None:
    soak_times(bundle, lambda values: [v * (0.9 if i % 2 else 1.1) for i, v in enumerate(values)])
    _, report = replay(bundle)
    assert _accept(report) == [("soak.iteration_jitter", "warning", 0)]
    assert check(report, "soak")["facts"]["gpus"][0]["iteration_ms"]["cv"] > 0.05


def _held_back(reasons: int, clock: int) -> Callable[[float, dict[str, Any]], None]:
    def change(load_t: float, sample: dict[str, Any]) -> None:
        if load_t >= 2:
            sample.update(power_w=505.0, sm_clock_mhz=clock, clock_event_reasons=reasons)

    return change


def test_power_settled_below_the_limit_with_clocks_held_is_a_warning(bundle: Path) -> None:
    soak_samples(bundle, _held_back(0x2, 1410))  # application clocks set low
    _, report = replay(bundle)
    assert _accept(report) == [("soak.power_below_limit", "warning", 0)]
    message = _message(report, "soak.power_below_limit")
    assert "505 W of its 700 W limit" in message and "1410 MHz of 1980" in message


def test_power_below_the_limit_at_maximum_clocks_is_quiet(bundle: Path) -> None:
    """A GPU at its maximum clock that needs less power than its limit is not held back."""
    soak_samples(bundle, _held_back(0x0, 1980))
    _, report = replay(bundle)
    assert _accept(report) == []


def test_power_below_the_limit_under_the_sw_power_cap_is_quiet(bundle: Path) -> None:
    soak_samples(bundle, _held_back(0x4, 1410))
    _, report = replay(bundle)
    assert _accept(report) == []
