"""Pure: what the pcie_aer judges and facts read of the AER events, counted as they come.

An error storm is hundreds of thousands of reports; `AerTally` is handed each event once, with
its place in the log (`add`), and keeps what `judge` reads: per device in error (`device or
reporter`, the key the judges map onto GPU paths) the reports by severity, the DPC
containments and the span of the corrected reports' times; per uncorrectable (severity,
device) the count, the error bits, the containments and the first reports (the excerpt); and
the storm facts (`kernlog.storm`: the first 1,000 events, groups). Memory grows with the
number of devices and groups, not of events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from sitscheck.kernlog.storm import BoundedEvents, Tally
from sitscheck.kernlog.times import seconds

if TYPE_CHECKING:  # the parser hands its events here (`parse.AerLines`), shaped in `events`
    from .events import AerEvent

EXCERPT = 5  # reports quoted in a finding's excerpt
UNCORRECTABLE = ("nonfatal", "fatal")


def _seconds(when: str | None) -> float | None:
    """`seconds`, the plain `dmesg` stamp ("68183.615790") read at once."""
    if when and when[0].isdigit():
        try:
            return float(when)  # what `seconds` gives (it strips the text first, as float does)
        except ValueError:
            pass
    return seconds(when)


class BusTally:
    """The reports of one device in error (`device or reporter`)."""

    __slots__ = ("by_severity", "containments", "corrected", "earliest", "latest", "timed")

    def __init__(self) -> None:
        self.by_severity = {"corrected": 0, "nonfatal": 0, "fatal": 0}
        self.containments = 0
        self.corrected = 0
        self.timed = 0  # corrected reports whose time reads as a point on one axis
        self.earliest: float | None = None
        self.latest: float | None = None

    def add(self, severity: str, contained: bool, at: float | None) -> None:
        """One more report, of a severity; a corrected one at `at` (None: no point in time)."""
        self.by_severity[severity] += 1
        if contained:
            self.containments += 1
        if severity != "corrected":
            return
        self.corrected += 1
        if at is not None:
            self.timed += 1
            if self.earliest is None or at < self.earliest:
                self.earliest = at
            if self.latest is None or at > self.latest:
                self.latest = at


class UncorrectedTally:
    """The uncorrectable reports of one (severity, device): a finding."""

    __slots__ = ("contained", "count", "errors", "first")

    def __init__(self) -> None:
        self.count = 0
        self.contained = 0
        self.errors: set[str] = set()
        self.first: list[tuple[int, AerEvent]] = []  # the first EXCERPT, by place in the log

    def add(self, index: int, event: AerEvent) -> None:
        """One more report, at `index` in the log."""
        self.count += 1
        if event.containment:
            self.contained += 1
        self.errors.update(event.errors)
        first = self.first
        if len(first) < EXCERPT or index < first[-1][0]:
            first.append((index, event))
            if len(first) > 1 and first[-2][0] > index:
                first.sort(key=lambda pair: pair[0])
            del first[EXCERPT:]


def aer_events(events: Iterable[AerEvent] = ()) -> BoundedEvents[AerEvent]:
    """AER events grouped per (device, severity, type, errors): the storm facts."""
    bounded: BoundedEvents[AerEvent] = BoundedEvents(
        ("device", "severity", "type", "errors"),
        lambda e: (e.device, e.severity, e.type, tuple(e.errors)),
        lambda e: e.time,
    )
    return bounded.extend(events)


class AerTally(Tally["AerEvent"]):
    """Every AER event of a log, counted; see the module's docstring."""

    def __init__(self) -> None:
        self.storm: BoundedEvents[AerEvent] = aer_events()
        self.buses: dict[str | None, BusTally] = {}
        self.uncorrected: dict[tuple[str, str | None], UncorrectedTally] = {}

    def add(self, index: int, event: AerEvent) -> None:
        """One event and its place in the log (events may come out of order)."""
        when = event.time
        at = _seconds(when)
        severity = event.severity
        self.storm.add_keyed(
            index, event, (event.device, severity, event.type, event.errors), when, at
        )
        bus = event.device or event.reporter
        self._bus(bus).add(severity, event.containment, at)
        if severity == "corrected":
            return
        group = self.uncorrected.get((severity, bus))
        if group is None:
            group = self.uncorrected[(severity, bus)] = UncorrectedTally()
        group.add(index, event)

    def _bus(self, bus: str | None) -> BusTally:
        tally = self.buses.get(bus)
        if tally is None:
            tally = self.buses[bus] = BusTally()
        return tally
