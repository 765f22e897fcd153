"""The soak's statistics: the steady state, and the figures over it.

The steady state begins at the first sample, at least WARMUP_S into the load, from which every
later sample's power and SM clock stay within STEADY_BAND of their medians over the last half
of the soak: what the GPU settles at, not its boost at the start nor a cooling tail.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from sitscheck.accept.records import median, percentile

WARMUP_S = 5.0
STEADY_BAND = 0.10
SLOPE_WINDOW_S = 30.0
# NVML clock-event reason bits (nvmlClocksEventReason*), in facts.md's names
REASON_BITS = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
}


def _series(samples: Sequence[dict[str, Any]], key: str) -> list[tuple[float, float]]:
    return [
        (float(s["t"]), float(s[key]))
        for s in samples
        if isinstance(s.get(key), int | float) and isinstance(s.get("t"), int | float)
    ]


def steady_from(samples: Sequence[dict[str, Any]]) -> float | None:
    power, clock = _series(samples, "power_w"), _series(samples, "sm_clock_mhz")
    if len(power) < 4 or len(clock) < 4:
        return None
    targets = [median([v for _, v in s[len(s) // 2 :]]) for s in (power, clock)]
    start = None
    for series, target in zip((power, clock), targets, strict=True):
        assert target is not None
        # the last sample outside the band: the steady state starts after it
        outside = [t for t, v in series if abs(v - target) > STEADY_BAND * target]
        begins = max([WARMUP_S, *(t + 1e-9 for t in outside)])
        start = begins if start is None else max(start, begins)
    later = [t for t, _ in power if t >= (start or 0.0)]
    return round(min(later), 1) if later else None


def slope_c_per_min(samples: Sequence[dict[str, Any]]) -> float | None:
    """Least-squares slope of the temperature over the last SLOPE_WINDOW_S, in °C a minute."""
    temps = _series(samples, "temp_c")
    if not temps:
        return None
    end = temps[-1][0]
    window = [(t, v) for t, v in temps if t >= end - SLOPE_WINDOW_S]
    if len(window) < 3:
        return None
    mean_t = statistics.fmean(t for t, _ in window)
    mean_v = statistics.fmean(v for _, v in window)
    spread = sum((t - mean_t) ** 2 for t, _ in window)
    if spread == 0:
        return None
    slope = sum((t - mean_t) * (v - mean_v) for t, v in window) / spread
    return round(slope * 60.0, 3)


def reason_seconds(samples: Sequence[dict[str, Any]], period_s: float) -> dict[str, float] | None:
    masks = [s.get("clock_event_reasons") for s in samples]
    if not samples or all(m is None for m in masks):
        return None
    return {
        name: round(sum(period_s for m in masks if isinstance(m, int) and m & bit), 1)
        for name, bit in REASON_BITS.items()
    }


def iteration_stats(times: Sequence[Sequence[Any]], since_s: float | None) -> list[float]:
    """Every iteration time (ms) of the batches the child sent at or after `since_s`."""
    start = since_s or 0.0
    found: list[float] = []
    for batch in times:
        t, values = batch[0], batch[1]
        if isinstance(t, int | float) and t >= start and isinstance(values, list):
            found.extend(float(v) for v in values if isinstance(v, int | float) and v > 0)
    return found


def summary(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p99": None, "cv": None}
    mean = statistics.fmean(values)
    cv = statistics.pstdev(values) / mean if mean > 0 and len(values) > 1 else None
    return {
        "p50": _round(median(values)),
        "p99": _round(percentile(values, 0.99)),
        "cv": round(cv, 4) if cv is not None else None,
    }


def _round(value: float | None, digits: int = 3) -> float | None:
    return round(value, digits) if value is not None else None
