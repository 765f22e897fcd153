"""Kernel-log timestamps as given → seconds on one axis, where the form allows it.

`[68183.615790]` (seconds since boot), `dmesg -T`/ctime (`Fri Aug 30 11:43:09 2024`), ISO-8601,
syslog (`Sep 19 16:18:02`, no year: comparable within one log). Relative `dmesg -H` deltas
(`+0.000316`) and localised month names give None: rates then fall back to counts.
"""

from __future__ import annotations

from datetime import datetime

_FORMATS = (
    "%a %b %d %H:%M:%S %Y",
    "%b %d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S%z",
    "%Y-%m-%dT%H:%M:%S.%f%z",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M:%S",
)


def seconds(text: str | None) -> float | None:
    if not text:
        return None
    value = text.strip()
    if value.startswith("+"):
        return None
    try:
        return float(value)
    except ValueError:
        pass
    collapsed = " ".join(value.split())
    for fmt in _FORMATS:
        try:
            return datetime.strptime(collapsed, fmt).timestamp()
        except ValueError:
            continue
    return None


def span_minutes(times: list[str | None]) -> float | None:
    """Minutes between the first and last parseable time; None when fewer than two parse."""
    values = [v for v in (seconds(t) for t in times) if v is not None]
    if len(values) < 2:
        return None
    return (max(values) - min(values)) / 60.0
