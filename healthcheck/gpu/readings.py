"""Pure helpers over readings: numbers, sample series, stats."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .view import GpuView


def stats(values: Iterable[float | int | None]) -> dict[str, float] | None:
    """min, mean, p95 (nearest rank) and max of the readings; None when there are none."""
    numbers = sorted(float(v) for v in values if isinstance(v, int | float) and math.isfinite(v))
    if not numbers:
        return None
    rank = max(math.ceil(0.95 * len(numbers)) - 1, 0)
    return {
        "min": round(numbers[0], 3),
        "mean": round(sum(numbers) / len(numbers), 3),
        "p95": round(numbers[rank], 3),
        "max": round(numbers[-1], 3),
    }


def number(value: Any) -> float | None:
    """A reading as a float; None for anything that is not one (missing, text, a flag)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def sample_values(gpu: GpuView, name: str) -> list[float]:
    """The readings of one sample field, in order, missing ones left out."""
    return [v for s in gpu.samples if (v := number(s.get(name))) is not None]
