"""Error storms in bounded facts: the first events kept, every event counted in groups.

A node in an error storm prints hundreds of thousands of AER or Xid reports. `BoundedEvents`
is fed events one at a time in log order (by a parser as it finishes them, or from a list)
and keeps the first `limit` of them, the number of events, and one `Group` per key (for AER
device, severity, type, errors; for Xid device, xid, sxid) with its count and the times of
its first and last event: memory grows with the number of distinct groups, not of events.
Each event may come with its place in the log, so a parser may settle events out of order.
`facts()` gives the "Storms" section of facts.md: `events`, `event_count`, `groups`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from datetime import datetime
from typing import Any, Generic, TypeVar

from .times import DATED, parse_time, seconds

MAX_EVENTS = 1000
E = TypeVar("E")


class Group:
    """The events of one key: how many, and the log's times of the first and the last."""

    __slots__ = ("count", "earliest", "first", "first_at", "key", "last", "last_at", "latest")

    def __init__(self, key: tuple[Hashable, ...], index: int, when: str | None, at: float | None):
        self.key = key
        self.count = 1
        self.first = self.last = when  # the times of the first and the last event, as given
        self.first_at = self.last_at = index  # their places in the log
        self.earliest = self.latest = at  # the smallest and largest time (`times.seconds`)

    def add(self, index: int, when: str | None, at: float | None) -> None:
        self.count += 1
        if index > self.last_at:
            self.last_at, self.last = index, when
        elif index < self.first_at:
            self.first_at, self.first = index, when
        if at is not None:
            if self.earliest is None or at < self.earliest:
                self.earliest = at
            if self.latest is None or at > self.latest:
                self.latest = at


class BoundedEvents(Generic[E]):
    """The first `limit` events, their number, and their groups by `key`.

    Events come with their place in the log (`index`, default: in the order added); a parser
    that settles some events later than others (an AER report whose severity the reports after
    it decide) hands them on out of order, and the facts are still those of log order."""

    def __init__(
        self,
        fields: tuple[str, ...],
        key: Callable[[E], tuple[Hashable, ...]],
        time: Callable[[E], str | None],
        limit: int = MAX_EVENTS,
    ) -> None:
        self.fields = fields
        self._key, self._time = key, time
        self.limit = limit  # the events at places from `limit` on are counted, not kept
        self._kept: dict[int, E] = {}  # index -> event, for the first `limit` places
        self.count = 0
        self.groups: dict[tuple[Hashable, ...], Group] = {}

    @property
    def kept(self) -> list[E]:
        return [self._kept[index] for index in sorted(self._kept)]

    def add(self, event: E, index: int | None = None) -> None:
        when = self._time(event)
        place = self.count if index is None else index
        self.add_keyed(place, event, self._key(event), when, seconds(when))

    def add_keyed(
        self, index: int, event: E, key: tuple[Hashable, ...], when: str | None, at: float | None
    ) -> None:
        """`add`, with the key and the time (`times.seconds`) the caller already has."""
        self.count += 1
        if index < self.limit:
            self._kept[index] = event
        group = self.groups.get(key)
        if group is None:
            self.groups[key] = Group(key, index, when, at)
        else:
            group.add(index, when, at)

    def extend(self, events: Iterable[E]) -> BoundedEvents[E]:
        for event in events:
            self.add(event)
        return self

    def ordered_groups(self) -> list[Group]:
        """The groups in the order of their first event."""
        return sorted(self.groups.values(), key=lambda g: g.first_at)

    def facts(self, to_fact: Callable[[E], dict[str, object]]) -> dict[str, object]:
        return {
            "events": [to_fact(e) for e in self.kept],
            "event_count": self.count,
            "groups": [self.group_fact(g) for g in self.ordered_groups()],
        }

    def group_fact(self, group: Group) -> dict[str, object]:
        named: dict[str, object] = {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in zip(self.fields, group.key, strict=True)
        }
        named.update(count=group.count, first=normalised(group.first), last=normalised(group.last))
        return named


T = TypeVar("T", bound="Tally[Any]")


class Tally(Generic[E]):
    """A check's bounded record of a log's events (`storm`, and what its judges read), made
    by `add`ing each event with its place in the log."""

    storm: BoundedEvents[E]

    def add(self, index: int, event: E) -> None:
        raise NotImplementedError

    @classmethod
    def of(cls: type[T], events: Iterable[Any]) -> T:
        """The tally of events in log order."""
        tally = cls()
        for index, event in enumerate(events):
            tally.add(index, event)
        return tally

    @property
    def count(self) -> int:
        return self.storm.count


def normalised(text: str | None) -> float | str | None:
    """A log's time as seconds since boot (`[68183.615790]`) or an ISO 8601 time (a dated
    form: `dmesg -T`, ISO, ctime); None for none, or a form without a date (syslog's
    `Sep 19 16:18:02`, `dmesg -H` deltas), which names no point in time."""
    parsed = parse_time(text, DATED)
    return parsed.isoformat() if isinstance(parsed, datetime) else parsed
