"""Kernel-log timestamps as given → seconds on one axis, where the form allows it.

`[68183.615790]` (seconds since boot), `dmesg -T`/ctime (`Fri Aug 30 11:43:09 2024`), ISO-8601,
syslog (`Sep 19 16:18:02`, no year: comparable within one log). Relative `dmesg -H` deltas
(`+0.000316`) and localised month names give None: rates then fall back to counts.
"""

from __future__ import annotations

from datetime import datetime

# forms that name a point in time (a date), then syslog's, which has no year
DATED = (
    "%a %b %d %H:%M:%S %Y",
    "%Y-%m-%dT%H:%M:%S%z",
    "%Y-%m-%dT%H:%M:%S.%f%z",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S",
)
_FORMATS = (*DATED, "%b %d %H:%M:%S")


def seconds(text: str | None) -> float | None:
    parsed = parse_time(text, _FORMATS)
    return parsed.timestamp() if isinstance(parsed, datetime) else parsed


def parse_time(text: str | None, forms: tuple[str, ...]) -> float | datetime | None:
    """Seconds since boot (`[68183.615790]`), or the time in the first of `forms` that reads
    it; None for none, or a `dmesg -H` delta (`+0.000316`) from the line before."""
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
    for form in forms:
        try:
            return datetime.strptime(collapsed, form)
        except ValueError:
            continue
    return None
