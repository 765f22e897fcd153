"""Pure: kernel-log lines reporting a completion-queue overrun, by the PCI function named.

The drivers' own words (the line handler sees the message with every log prefix stripped):
- mlx5 (drivers/net/ethernet/mellanox/mlx5/core/eq.c, `cq_err_event_notifier`):
  `mlx5_core 0000:08:00.0: cq_err_event_notifier:517:(pid 0): CQ error on CQN 0x487, syndrome 0x1`;
  syndrome 0x1 is MLX5_CQ_ERROR_SYNDROME_CQ_OVERRUN, 0x2 an access violation (not counted);
- mlx4 and mthca (`mlx4_core/eq.c`): `mlx4_core 0000:04:00.0: CQ overrun on CQN 000085`
  (`CQ access violation on CQN ...` is not counted).
A CQ that overran is put in error: each CQ overruns once, so these are events, not a rate.
"""

from __future__ import annotations

import re

from msgspec import Struct, field

_BUS = r"(?P<bus>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])"
_MLX5 = re.compile(
    _BUS + r"\b.*?CQ error on CQN (?P<cqn>0x[0-9a-fA-F]+), syndrome (?P<syn>0x[0-9a-fA-F]+)"
)
_MLX4 = re.compile(_BUS + r"\b.*?CQ overrun on CQN (?P<cqn>[0-9a-fA-F]+)\b")
OVERRUN_SYNDROME = 0x1


class CqOverrun(Struct, frozen=True):
    """One overrun line: the PCI function, the CQ number, the log's timestamp and the line."""

    pci_bus_id: str  # lower case, as sysfs spells it
    cqn: str
    time: str | None
    line: str


class CqOverrunLines(Struct):
    """The line handler: every overrun, in log order (bounded: counts beyond `keep` lines
    are kept as a number)."""

    keep: int = 256
    events: list[CqOverrun] = field(default_factory=list)
    by_bus: dict[str, int] = field(default_factory=dict)

    def feed(self, body: str, time: str | None) -> None:
        """A line's message and time: the pass hands it only the lines holding its anchors'
        needles (those `parse_overrun` reads)."""
        event = parse_overrun(body, time)
        if event is None:
            return
        self.by_bus[event.pci_bus_id] = self.by_bus.get(event.pci_bus_id, 0) + 1
        if len(self.events) < self.keep:
            self.events.append(event)

    def finish(self) -> CqOverrunLines:
        return self


def parse_overrun(body: str, time: str | None = None) -> CqOverrun | None:
    if "CQ error on CQN " in body:
        match = _MLX5.search(body)
        if match is None or int(match.group("syn"), 16) != OVERRUN_SYNDROME:
            return None
    elif "CQ overrun on CQN " in body:
        match = _MLX4.search(body)
        if match is None:
            return None
    else:
        return None
    return CqOverrun(_bus(match.group("bus")), match.group("cqn").lower(), time, body)


def _bus(text: str) -> str:
    domain, _, rest = text.lower().partition(":")
    return f"{domain[-4:]}:{rest}"
