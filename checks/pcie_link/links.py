"""Pure: a GPU's PCIe path as sysfs shows it, and what each link should be."""

from __future__ import annotations

import re

from msgspec import Struct

# sysfs `current_link_speed` values ("32.0 GT/s PCIe", "8 GT/s", "2.5 GT/s PCIe") -> generation.
_GEN_BY_GTS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
_SPEED = re.compile(r"^\s*(?P<gts>\d+(?:\.\d+)?)\s*GT/s")


class Vanished(Struct, frozen=True):
    """A device on the GPU's path whose sysfs folder disappeared while its link was read
    (hot-unplug, a device fallen off the bus, a reset under way): its link state is unknown."""

    bus_id: str
    path: str


class PortLink(Struct, frozen=True):
    """One device on the GPU's path (root port first, the GPU last) and its link readings."""

    bus_id: str
    path: str
    role: str  # "gpu" or "port"
    width_current: int | None
    width_max: int | None
    gen_current: int | None
    gen_max: int | None


def parse_width(text: str | None) -> int | None:
    if text is None:
        return None
    value = text.strip()
    return int(value) if value.isdigit() else None


def parse_gen(text: str | None) -> int | None:
    """The PCIe generation a sysfs link speed stands for; None for "Unknown" and the like."""
    if text is None:
        return None
    match = _SPEED.match(text)
    if match is None:
        return None
    return _GEN_BY_GTS.get(float(match["gts"]))


def expected(chain: list[PortLink], position: int, attr: str) -> int | None:
    """What a device's link can reach: the smaller of its own maximum and its neighbour's.

    The GPU's neighbour is the port above it; a port's is the next device down its path
    (the other end of its link, or for a switch's upstream port the switch's downstream port).
    """
    own = getattr(chain[position], attr)
    if own is None:
        return None
    neighbour_at = position - 1 if chain[position].role == "gpu" else position + 1
    if 0 <= neighbour_at < len(chain):
        other = getattr(chain[neighbour_at], attr)
        if isinstance(other, int) and other > 0:
            return min(int(own), other)
    return int(own)
