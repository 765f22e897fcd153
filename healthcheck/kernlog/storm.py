"""Error storms in bounded facts: the first events kept, every event counted in groups.

A node in an error storm prints hundreds of thousands of AER or Xid reports. `BoundedEvents`
is fed events one at a time in log order (by a parser as it finishes them, or from a list)
and keeps the first `limit` of them, the number of events, and one `Group` per key (for AER
device, severity, type, errors; for Xid device, xid, sxid) with its count and the times of
its first and last event: memory grows with the number of distinct groups, not of events.
`facts()` gives the "Storms" section of facts.md: `events`, `event_count`, `groups`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from .times import DATED, parse_time, seconds

MAX_EVENTS = 1000
E = TypeVar("E")


@dataclass
class Group:
    """The events of one key: how many, and the log's times of the first and the last."""

    key: tuple[Hashable, ...]
    count: int
    first: str | None
    last: str | None
    earliest: float | None  # the smallest and largest time on one axis (`times.seconds`)
    latest: float | None


class BoundedEvents(Generic[E]):
    """The first `limit` events, their number, and their groups by `key`."""

    def __init__(
        self,
        fields: tuple[str, ...],
        key: Callable[[E], tuple[Hashable, ...]],
        time: Callable[[E], str | None],
        limit: int = MAX_EVENTS,
    ) -> None:
        self.fields = fields
        self._key, self._time, self._limit = key, time, limit
        self.kept: list[E] = []
        self.count = 0
        self.groups: dict[tuple[Hashable, ...], Group] = {}

    def add(self, event: E) -> None:
        self.count += 1
        if len(self.kept) < self._limit:
            self.kept.append(event)
        key = self._key(event)
        when = self._time(event)
        at = seconds(when)
        group = self.groups.get(key)
        if group is None:
            self.groups[key] = Group(key, 1, when, when, at, at)
            return
        group.count += 1
        group.last = when
        if at is not None:
            group.earliest = at if group.earliest is None else min(group.earliest, at)
            group.latest = at if group.latest is None else max(group.latest, at)

    def extend(self, events: Iterable[E]) -> BoundedEvents[E]:
        for event in events:
            self.add(event)
        return self

    def facts(self, to_fact: Callable[[E], dict[str, object]]) -> dict[str, object]:
        return {
            "events": [to_fact(e) for e in self.kept],
            "event_count": self.count,
            "groups": [self.group_fact(g) for g in self.groups.values()],
        }

    def group_fact(self, group: Group) -> dict[str, object]:
        named: dict[str, object] = {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in zip(self.fields, group.key, strict=True)
        }
        named.update(count=group.count, first=normalised(group.first), last=normalised(group.last))
        return named


def normalised(text: str | None) -> float | str | None:
    """A log's time as seconds since boot (`[68183.615790]`) or an ISO 8601 time (a dated
    form: `dmesg -T`, ISO, ctime); None for none, or a form without a date (syslog's
    `Sep 19 16:18:02`, `dmesg -H` deltas), which names no point in time."""
    parsed = parse_time(text, DATED)
    return parsed.isoformat() if isinstance(parsed, datetime) else parsed


def aer_events(events: Iterable[Any] = ()) -> BoundedEvents[Any]:
    """AER events (`AerEvent`) grouped per (device, severity, type, errors)."""
    bounded: BoundedEvents[Any] = BoundedEvents(
        ("device", "severity", "type", "errors"),
        lambda e: (e.device, e.severity, e.type, tuple(e.errors)),
        lambda e: e.time,
    )
    return bounded.extend(events)


def xid_events(events: Iterable[Any] = ()) -> BoundedEvents[Any]:
    """Xid events (`XidEvent`) grouped per (device, xid, sxid)."""
    bounded: BoundedEvents[Any] = BoundedEvents(
        ("device", "xid", "sxid"), lambda e: (e.device, e.xid, e.sxid), lambda e: e.time
    )
    return bounded.extend(events)
