"""Each counter of a port (or HCA) over the window: its total, its growth, or why it has none."""

from __future__ import annotations

from collections.abc import Mapping

from msgspec import Struct

from . import counters as c
from .parse import counter
from .tree import PortFiles


class Growth(Struct):
    """One counter over the window."""

    total: int | None = None
    delta: int | None = None
    state: str = "ok"  # ok | unreadable | saturated | went_back


def counters_of(
    port: PortFiles, later: PortFiles | None, seconds: float | None
) -> dict[str, Growth]:
    """Every counter of a port over the window, by its path under the port."""
    keys = [k for k in port.files if k.startswith((c.COUNTERS, c.COUNTERS_EXT, c.HW))]
    return {
        key: growth_of(key, port.files.get(key), later.files.get(key) if later else None, seconds)
        for key in sorted(keys)
    }


def growth_of(key: str, first: str | None, last: str | None, seconds: float | None) -> Growth:
    before = counter(first)
    after = counter(last) if seconds is not None else None
    total = after if after is not None else before
    if total is None:
        return Growth(state="unreadable")
    width = c.PMA_WIDTH.get(key.removeprefix(c.COUNTERS)) if key.startswith(c.COUNTERS) else None
    top = (1 << width) - 1 if width is not None else None
    if top is not None and before == top:
        return Growth(total, None, "saturated")  # stuck at all ones: growth unknown
    if before is None or after is None:
        return Growth(total)
    if after < before:
        return Growth(total, None, "went_back")
    # at its maximum by the end, the growth is at least this much
    return Growth(total, after - before, "saturated" if after == top else "ok")


def window_packets(growth: Mapping[str, Growth], direction: str) -> int | None:
    """Packets sent (or received) during the window: the PMA counter, else the 64-bit one."""
    basic = growth.get(f"{c.COUNTERS}port_{direction}_packets")
    if basic is not None and basic.delta is not None and basic.state == "ok":
        return basic.delta
    wide = growth.get(f"{c.COUNTERS_EXT}port_{direction}_packets_64")
    if wide is not None and wide.delta is not None and wide.delta > 0:
        return wide.delta
    return None


def total(growth: Mapping[str, Growth], name: str) -> int | None:
    """A data/packet total: the 64-bit extended counter where the PMA one is stuck."""
    basic = growth.get(f"{c.COUNTERS}{name}")
    if basic is not None and basic.total is not None and basic.state != "saturated":
        return basic.total
    wide = growth.get(f"{c.COUNTERS_EXT}{name}_64")
    if wide is not None and wide.total:
        return wide.total
    return basic.total if basic is not None else None


def why(growth: Growth) -> str:
    return {
        "saturated": "is stuck at its maximum",
        "went_back": "went back (reset or wrapped)",
    }.get(growth.state, "was read once")
