"""Pure: the text of `/sys/class/infiniband` files → values.

The kernel's own formats (drivers/infiniband/core/sysfs.c):
- `state`      `"%d: %s"`: `4: ACTIVE`, `1: DOWN`, `2: INIT`, `3: ARMED`, `5: ACTIVE_DEFER`
- `phys_state` `"%d: %s"`: `5: LinkUp`, `2: Polling`, `3: Disabled`, `7: Phy Test`, `N: <unknown>`
- `rate`       `"%d%s Gb/sec (%dX%s)"`: `400 Gb/sec (4X NDR)`, `2.5 Gb/sec (1X SDR)`,
               `10 Gb/sec (4X)` (an iWARP device names no speed)
- `link_layer` `InfiniBand`, `Ethernet` or `Unknown`
- a PMA counter (`counters/*`): a decimal number, or `N/A (no PMA)` where the device answers no
  performance-management MAD (iWARP, some virtual functions)
- `hw_counters/*`: a decimal number
- `device/uevent`: `KEY=value` lines; `PCI_SLOT_NAME=0000:1a:00.0` names the PCI function
"""

from __future__ import annotations

import re

from msgspec import Struct

_NUMBERED = re.compile(r"^\s*(\d+)\s*:\s*(.*?)\s*$")
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec\s*\((\d+)X\s*([A-Za-z0-9]*)\)\s*$")
_COUNTER = re.compile(r"^\s*(\d+)\s*$")
_SLOT = re.compile(r"^PCI_SLOT_NAME=([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")

PORT_ACTIVE = 4  # IB_PORT_ACTIVE
PHYS_LINK_UP = 5
PHYS_DISABLED = 3


class Numbered(Struct, frozen=True):
    """`4: ACTIVE` as (4, "ACTIVE")."""

    code: int
    name: str


class Rate(Struct, frozen=True):
    """`400 Gb/sec (4X NDR)`: 400.0 Gb/s over 4 lanes at NDR; `speed` is "" when none printed."""

    gbps: float
    width: int
    speed: str


def numbered(text: str | None) -> Numbered | None:
    """A `state` or `phys_state` file's value, or None when it is not the kernel's format."""
    if text is None:
        return None
    match = _NUMBERED.match(text.strip())
    return Numbered(int(match.group(1)), match.group(2)) if match else None


def rate(text: str | None) -> Rate | None:
    if text is None:
        return None
    match = _RATE.match(text.strip())
    if match is None:
        return None
    return Rate(float(match.group(1)), int(match.group(2)), match.group(3))


def counter(text: str | None) -> int | None:
    """A counter's value; None for `N/A (no PMA)`, an empty or unreadable file."""
    if text is None:
        return None
    match = _COUNTER.match(text)
    return int(match.group(1)) if match else None


def slot_name(uevent: str | None) -> str | None:
    """The PCI bus id (`0000:1a:00.0`) a `device/uevent` names, lower case."""
    for line in (uevent or "").splitlines():
        match = _SLOT.match(line.strip())
        if match:
            return match.group(1).lower()
    return None


def first_line(text: str | None) -> str | None:
    value = (text or "").strip().splitlines()
    return value[0].strip() if value and value[0].strip() else None
