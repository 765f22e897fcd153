"""Pure: what the xid judges and facts read of the Xid events, counted as they come.

`XidTally` is handed each event once with its place in the log (`add`; the events of one
device in log order, those of different devices in any) and keeps, per (device, kind, code)
group, the count, the first reports and the last (the finding's excerpt and "Last:"), and the
catalogue's assessment of all of them (`assess`); and the storm facts (`kernlog.storm`: the
first 1,000 events, groups). Memory grows with the number of groups, not of events.
"""

from __future__ import annotations

from collections.abc import Iterable

from sitscheck.kernlog.storm import BoundedEvents, Tally
from sitscheck.kernlog.times import seconds

from .catalog import XidInfo, assess_xid, lookup_sxid, lookup_xid
from .events import XidEvent

FALLEN_OFF_BUS = 79
EXCERPT = 3  # reports quoted in a finding's excerpt


class XidGroup:
    """The reports of one (device, kind, code): kind "xid" (a fallen-off message without an
    Xid number is an Xid 79) or "sxid"."""

    __slots__ = ("code", "count", "device", "first", "first_at", "info", "kind", "last")

    def __init__(self, device: str | None, kind: str, code: int, index: int, event: XidEvent):
        self.device, self.kind, self.code = device, kind, code
        self.count = 1
        self.first_at = index
        self.first = [event]  # the first EXCERPT, in log order
        self.last = event
        self.info = lookup_sxid(code) if kind == "sxid" else assess(code, lookup_xid(code), event)

    def add(self, event: XidEvent) -> None:
        self.count += 1
        if len(self.first) < EXCERPT:
            self.first.append(event)
        self.last = event
        if self.kind == "xid":
            self.info = assess(self.code, self.info, event)


def assess(code: int, worst: XidInfo, event: XidEvent) -> XidInfo:
    """The group's assessment after one more of its events: the worst severity the catalogue
    gives any of them; for Xid 154 the recovery action the latest one announces."""
    info = assess_xid(code, event.message)
    if _rank(info.severity) > _rank(worst.severity):
        return info
    if code == 154 and info.action != worst.action:
        return info
    return worst


def _rank(severity: str) -> int:
    return {"info": 0, "warning": 1, "critical": 2}.get(severity, 1)


def xid_events(events: Iterable[XidEvent] = ()) -> BoundedEvents[XidEvent]:
    """Xid events grouped per (device, xid, sxid): the storm facts."""
    bounded: BoundedEvents[XidEvent] = BoundedEvents(
        ("device", "xid", "sxid"), lambda e: (e.device, e.xid, e.sxid), lambda e: e.time
    )
    return bounded.extend(events)


class XidTally(Tally["XidEvent"]):
    """Every Xid event of a log, counted; see the module's docstring."""

    def __init__(self) -> None:
        self.storm: BoundedEvents[XidEvent] = xid_events()
        self.groups: dict[tuple[str | None, str, int], XidGroup] = {}

    def add(self, index: int, event: XidEvent) -> None:
        when = event.time
        device = event.device
        self.storm.add_keyed(index, event, (device, event.xid, event.sxid), when, seconds(when))
        if event.sxid is not None:
            key = (device, "sxid", event.sxid)
        else:
            key = (device, "xid", event.xid or FALLEN_OFF_BUS)
        group = self.groups.get(key)
        if group is None:
            self.groups[key] = XidGroup(device, key[1], key[2], index, event)
        else:
            group.add(event)

    def ordered(self) -> list[XidGroup]:
        """The groups in the order of their first event."""
        return sorted(self.groups.values(), key=lambda g: g.first_at)
