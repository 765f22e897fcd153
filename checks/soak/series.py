"""The soak's trace per GPU, as the report's series: what the html reporter draws.

From the record (accept/soak.json): the 1 Hz NVML samples (SM clock, power, GPU and HBM
temperature) and the child's per-second batches of iteration times, one point a batch (the
batch's median). Per-second points only: the statistics over them are the facts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from sitscheck.contract.phase_record import Entry, median
from sitscheck.models import Level, Moment, Series, SeriesLine

# Seed 003 §2.5: from 83 °C the clocks scale down (DFS). A line for the eye on the temperature
# chart, judging nothing: the warning is the rule's, with its own (site-overridable) param.
SCALING_POINT_C = 83.0
# (record key, label, unit, digits kept)
SAMPLED = (
    ("sm_clock_mhz", "SM clock", "MHz", 0),
    ("power_w", "power", "W", 1),
    ("temp_c", "GPU temperature", "Cel", 0),
    ("mem_temp_c", "HBM temperature", "Cel", 0),
)


def soak_series(
    entry: Entry,
    result: dict[str, Any],
    samples: Sequence[dict[str, Any]],
    steady_from_s: float | None,
) -> Series:
    """One GPU's trace: `samples` (those taken under load, timed from its start as the
    iteration times are) and the iteration times. A quantity NVML never read (HBM temperature
    on some boards) is left out rather than drawn as a flat nothing."""
    lines = [_sampled(samples, *spec) for spec in SAMPLED]
    lines.append(_iterations(result.get("times") or []))
    limit = median([float(s["power_limit_w"]) for s in samples if _number(s.get("power_limit_w"))])
    levels = [Level(value=SCALING_POINT_C, unit="Cel", label="83 °C: clocks scale down")]
    if limit is not None:
        levels.append(Level(value=round(limit, 1), unit="W", label=f"power limit {limit:.0f} W"))
    moments = []
    if steady_from_s is not None:
        moments.append(Moment(t=steady_from_s, label="steady state"))
    return Series(
        device=entry.device(),
        lines=[line for line in lines if any(v is not None for v in line.values)],
        moments=moments,
        levels=levels,
    )


def _sampled(
    samples: Sequence[dict[str, Any]], key: str, label: str, unit: str, digits: int
) -> SeriesLine:
    timed = [s for s in samples if _number(s.get("t"))]
    return SeriesLine(
        name=key,
        label=label,
        unit=unit,
        t=[round(float(s["t"]), 1) for s in timed],
        values=[round(float(s[key]), digits) if _number(s.get(key)) else None for s in timed],
    )


def _iterations(times: Sequence[Any]) -> SeriesLine:
    points: list[tuple[float, float | None]] = []
    for batch in times:
        if not (isinstance(batch, list | tuple) and len(batch) == 2 and _number(batch[0])):
            continue
        values = batch[1] if isinstance(batch[1], list) else []
        middle = median([float(v) for v in values if _number(v) and v > 0])
        points.append((round(float(batch[0]), 1), round(middle, 3) if middle is not None else None))
    return SeriesLine(
        name="iteration_ms",
        label="iteration time (median of each second)",
        unit="ms",
        t=[t for t, _ in points],
        values=[v for _, v in points],
    )


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
