"""checks/soak/stats.py: the load's window, the steady state, the temperature's slope, the
clock-event reasons' seconds, the iteration times, and the records' percentiles. Sample values
are the real H200's (tests/accept/data/make_records.py)."""

from __future__ import annotations

from typing import Any

import pytest
from sitscheck.checks.soak import stats
from sitscheck.contract.phase_record import finite, median, percentile


def trace(power: list[float], clock: list[float] | None = None) -> list[dict[str, Any]]:
    """One sample a second from t = 0."""
    clocks = clock or [1485.0] * len(power)
    return [
        {"t": float(t), "power_w": p, "sm_clock_mhz": c}
        for t, (p, c) in enumerate(zip(power, clocks, strict=True))
    ]


# ---------------------------------------------------------------- the load's window


def test_load_window_keeps_the_load_and_counts_from_its_start() -> None:
    samples = [{"t": float(t), "power_w": 78.4 if t < 3 or t > 13 else 690.0} for t in range(16)]
    window = stats.load_window(samples, 3.0, 10.0)
    assert [s["t"] for s in window] == [float(t) for t in range(11)]
    assert {s["power_w"] for s in window} == {690.0}
    assert window[0] is not samples[3] and samples[3]["t"] == 3.0  # the record left as it is


def test_load_window_without_a_time_drops_the_sample() -> None:
    assert stats.load_window([{"t": None}, {"t": "1"}, {"t": 1.0}, {}], 0.0, 5.0) == [{"t": 1.0}]


# ---------------------------------------------------------------- the steady state


def test_steady_from_the_warm_up_when_settled_at_once() -> None:
    assert stats.steady_from(trace([690.0] * 30)) == 5.0


def test_steady_after_the_boost_and_the_last_excursion() -> None:
    power = [520.3, 690.0, 690.0] + [690.0] * 10 + [452.0] * 3 + [690.0] * 20
    assert stats.steady_from(trace(power)) == 16.0  # the first sample after the last one outside


def test_steady_state_reads_the_clock_too() -> None:
    clock = [1485.0] * 12 + [990.0] + [1485.0] * 20
    assert stats.steady_from(trace([690.0] * 33, clock)) == 13.0


def test_within_ten_percent_is_steady() -> None:
    power = [690.0] * 10 + [622.0] + [690.0] * 20  # 9.9 % below
    assert stats.steady_from(trace(power)) == 5.0
    power[10] = 620.0  # 10.1 % below
    assert stats.steady_from(trace(power)) == 11.0


def test_no_steady_state_when_the_last_sample_is_outside() -> None:
    assert stats.steady_from(trace([690.0] * 20 + [300.0])) is None


def test_too_few_samples_for_a_steady_state() -> None:
    assert stats.steady_from(trace([690.0] * 3)) is None
    assert stats.steady_from(trace([690.0] * 4)) is None  # four samples, none after the warm-up
    assert stats.steady_from(trace([690.0] * 6)) == 5.0


def test_unreadable_power_is_no_steady_state() -> None:
    samples = [{"t": float(t), "power_w": None, "sm_clock_mhz": 1485} for t in range(30)]
    assert stats.steady_from(samples) is None


# ---------------------------------------------------------------- the temperature's slope


def _temps(values: list[float]) -> list[dict[str, Any]]:
    return [{"t": float(t), "temp_c": v} for t, v in enumerate(values)]


def test_slope_of_a_steady_rise_in_degrees_a_minute() -> None:
    assert stats.slope_c_per_min(_temps([40.0 + t / 10 for t in range(100)])) == pytest.approx(6.0)


def test_slope_reads_only_the_last_30_seconds() -> None:
    values = [40.0 + t for t in range(60)] + [61.0] * 40  # fast warm-up, then flat
    assert stats.slope_c_per_min(_temps(values)) == 0.0


def test_one_whole_degree_step_in_the_middle_reads_about_3_per_minute() -> None:
    values = [60.0] * 85 + [61.0] * 15  # the window is t 69..99: the step at its middle
    assert 2.5 < stats.slope_c_per_min(_temps(values)) < 3.5  # type: ignore[operator]


def test_slope_needs_three_samples_in_time() -> None:
    assert stats.slope_c_per_min(_temps([60.0, 61.0])) is None
    assert stats.slope_c_per_min([]) is None
    same_time = [{"t": 1.0, "temp_c": v} for v in (60.0, 61.0, 62.0)]
    assert stats.slope_c_per_min(same_time) is None


# ---------------------------------------------------------------- clock-event reasons


def test_reason_seconds_count_each_bit() -> None:
    masks = [0x4] * 10 + [0x4 | 0x8] * 3 + [0x80] + [0x1]
    found = stats.reason_seconds([{"clock_event_reasons": m} for m in masks], 1.0)
    assert found == {
        "gpu_idle": 1.0,
        "applications_clocks_setting": 0.0,
        "sw_power_cap": 13.0,
        "hw_slowdown": 3.0,
        "sync_boost": 0.0,
        "sw_thermal_slowdown": 0.0,
        "hw_thermal_slowdown": 0.0,
        "hw_power_brake_slowdown": 1.0,
    }
    assert all(isinstance(v, float) for v in found.values())


def test_reason_seconds_scale_with_the_period() -> None:
    found = stats.reason_seconds([{"clock_event_reasons": 0x40}] * 4, 0.5)
    assert found is not None and found["hw_thermal_slowdown"] == 2.0


def test_unreadable_reasons_are_none_not_zero() -> None:
    assert stats.reason_seconds([{"clock_event_reasons": None}] * 5, 1.0) is None
    assert stats.reason_seconds([], 1.0) is None
    assert stats.reason_seconds([{"clock_event_reasons": True}], 1.0) is None  # not a mask


# ---------------------------------------------------------------- iteration times


def test_iteration_times_from_the_steady_state_on() -> None:
    times = [[1.0, [1.9, 1.8]], [5.0, [1.656]], [6.0, [1.657, 1.655]], [7.0, "bad"], "bad"]
    assert stats.iteration_stats(times, 5.0) == [1.656, 1.657, 1.655]
    assert stats.iteration_stats(times, None) == []  # no steady state: nothing counts


def test_iteration_times_drop_what_is_no_time() -> None:
    assert stats.iteration_stats([[5.0, [1.6, 0, -1.0, None, "x", True, float("nan")]]], 0.0) == [
        1.6
    ]


def test_summary_of_iteration_times() -> None:
    values = [1.600, 1.656, 1.656, 1.693] * 25
    found = stats.summary(values)
    assert found["p50"] == 1.656 and found["p99"] == 1.693
    cv = found["cv"]
    assert cv is not None and 0.01 < cv < 0.04
    assert stats.summary([]) == {"p50": None, "p99": None, "cv": None}
    assert stats.summary([1.656])["cv"] is None


# ---------------------------------------------------------------- percentiles (nearest rank)


def test_percentiles_by_nearest_rank() -> None:
    values = [float(v) for v in range(100, 0, -1)]  # 100 .. 1, unsorted
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 0.01) == 1.0
    assert percentile(values, 0.05) == 5.0
    assert percentile(values, 1.0) == 100.0
    assert percentile(values, 0.0) == 1.0
    assert percentile([687.68, 690.97], 0.05) == 687.68
    assert percentile([], 0.5) is None
    assert median([1.0, 3.0]) == 2.0 and median([]) is None


def test_finite_numbers_only() -> None:
    assert finite(3) == 3.0 and isinstance(finite(3), float)
    for value in (None, True, "1", float("nan"), float("inf"), [1]):
        assert finite(value) is None
