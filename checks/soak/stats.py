"""The soak's statistics: the load's window of the trace, its steady state, and the figures.

The parent samples every GPU from before its workload starts until after the last one ends;
`load_window` keeps one GPU's samples taken while its workload ran (from the moment it said it
was ready, for the seconds it ran) and counts their time from the start of the load, the
clock the workload's iteration times use.

The steady state begins at the first sample, at least WARMUP_S into the load, from which every
later sample's power and SM clock stay within STEADY_BAND of their medians over the last half
of the load: what the GPU settles at, not its boost at the start.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from sitscheck.checks.gpu_telemetry.reasons import REASON_BITS as NVML_REASON_BITS
from sitscheck.contract.phase_record import finite, median, percentile

WARMUP_S = 5.0
STEADY_BAND = 0.10
SLOPE_WINDOW_S = 30.0
MIN_SAMPLES = 4  # of power and of SM clock, for a steady state
# facts.md's `reasons_s` keys: NVML's clock-event reason bits (the telemetry check's table),
# all but the display clock's
REASON_BITS = {n: bit for n, bit in NVML_REASON_BITS.items() if n != "display_clock_setting"}


def load_window(
    samples: Sequence[dict[str, Any]], started_s: float, seconds: float
) -> list[dict[str, Any]]:
    """The samples taken while the load ran (`started_s` on the sampler's clock, for
    `seconds`), each with `t` counted from the start of the load."""
    return [
        {**s, "t": round(float(s["t"]) - started_s, 3)}
        for s in samples
        if finite(s.get("t")) is not None and started_s <= float(s["t"]) <= started_s + seconds
    ]


def _series(samples: Sequence[dict[str, Any]], key: str) -> list[tuple[float, float]]:
    pairs = ((finite(s.get("t")), finite(s.get(key))) for s in samples)
    return [(t, v) for t, v in pairs if t is not None and v is not None]


def steady_from(samples: Sequence[dict[str, Any]]) -> float | None:
    """When the steady state begins (the samples' clock), or None: too few samples, or the
    power or the SM clock still outside the band at the last sample."""
    power, clock = _series(samples, "power_w"), _series(samples, "sm_clock_mhz")
    if len(power) < MIN_SAMPLES or len(clock) < MIN_SAMPLES:
        return None
    begins = WARMUP_S
    for series in (power, clock):
        target = median([v for _, v in series[len(series) // 2 :]])
        assert target is not None
        # the last sample outside the band: the steady state starts after it
        outside = [t for t, v in series if abs(v - target) > STEADY_BAND * target]
        begins = max([begins, *(t + 1e-9 for t in outside)])
    later = [t for t, _ in power if t >= begins]
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
    """Seconds each clock-event reason was set, a sample counting for `period_s`; None where
    no sample could read the reasons."""
    masks = [s.get("clock_event_reasons") for s in samples]
    readable = [m for m in masks if isinstance(m, int) and not isinstance(m, bool)]
    if not readable:
        return None
    return {
        name: round(sum((period_s for m in readable if m & bit), 0.0), 1)
        for name, bit in REASON_BITS.items()
    }


def iteration_stats(times: Sequence[Any], since_s: float | None) -> list[float]:
    """Every iteration time (ms) of the batches the child sent at or after `since_s` (None:
    no steady state, no iteration counts)."""
    if since_s is None:
        return []
    found: list[float] = []
    for batch in times:
        if not isinstance(batch, list | tuple) or len(batch) != 2:
            continue
        t, values = batch
        at = finite(t)
        if at is not None and at >= since_s and isinstance(values, list):
            found.extend(v for v in map(finite, values) if v is not None and v > 0)
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
