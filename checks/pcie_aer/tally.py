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

from typing import TYPE_CHECKING

from sitscheck.kernlog.storm import BoundedEvents, Run, Tally, aer_events
from sitscheck.kernlog.times import seconds

if TYPE_CHECKING:  # the parser hands its events here (`parse.AerLines`)
    from .parse import AerEvent

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

    def add(
        self,
        severity: str,
        contained: bool,
        reports: int,
        timed: int,
        earliest: float | None,
        latest: float | None,
    ) -> None:
        """`reports` more of one severity; of a corrected one, `timed` of them with a time,
        the smallest and largest `earliest`, `latest` (None: none)."""
        self.by_severity[severity] += reports
        if contained:
            self.containments += reports
        if severity != "corrected":
            return
        self.corrected += reports
        if timed:
            self.timed += timed
            if self.earliest is None or earliest < self.earliest:  # type: ignore[operator]
                self.earliest = earliest
            if self.latest is None or latest > self.latest:  # type: ignore[operator]
                self.latest = latest


class UncorrectedTally:
    """The uncorrectable reports of one (severity, device): a finding."""

    __slots__ = ("contained", "count", "errors", "first")

    def __init__(self) -> None:
        self.count = 0
        self.contained = 0
        self.errors: set[str] = set()
        self.first: list[tuple[int, AerEvent]] = []  # the first EXCERPT, by place in the log

    def add(self, reports: int, contained: bool, errors: tuple[str, ...]) -> None:
        """`reports` more, of these error bits."""
        self.count += reports
        if contained:
            self.contained += reports
        self.errors.update(errors)


class AerTally(Tally["AerEvent"]):
    """Every AER event of a log, counted; see the module's docstring."""

    def __init__(self) -> None:
        self.storm: BoundedEvents[AerEvent] = aer_events()
        self.buses: dict[str | None, BusTally] = {}
        self.uncorrected: dict[tuple[str, str | None], UncorrectedTally] = {}

    def add(self, index: int, event: AerEvent) -> None:
        """One event and its place in the log (events may come out of order)."""
        self.add_at(index, event, event.time)

    def add_at(self, index: int, event: AerEvent, when: str | None) -> None:
        """`add` of the event `event` stands for, which began at `when` (the parser's `Sink`:
        a storm's reports share one event; one of their own is made only where kept)."""
        at = _seconds(when)
        severity = event.severity
        storm = self.storm
        if index < storm.limit:
            event = event.at(when)
        storm.add_keyed(index, event, (event.device, severity, event.type, event.errors), when, at)
        bus = event.device or event.reporter
        self._bus(bus).add(severity, event.containment, 1, at is not None, at, at)
        if severity == "corrected":
            return
        group = self.uncorrected.get((severity, bus))
        if group is None:
            group = self.uncorrected[(severity, bus)] = UncorrectedTally()
        group.add(1, event.containment, event.errors)
        first = group.first
        if len(first) < EXCERPT or index < first[-1][0]:
            first.append((index, event.at(when)))
            if len(first) > 1 and first[-2][0] > index:
                first.sort(key=lambda pair: pair[0])
            del first[EXCERPT:]

    def add_run(
        self, places: list[int], events: tuple[AerEvent, ...], whens: list[str | None]
    ) -> None:
        """`add_at` of each of `events` for each report: at its place in `places` (rising, each
        that of the report's first event) and its time in `whens` (the parser's `RunSink`: a
        storm's reports that differ only in their time), counted at once where no event of
        them is kept: past the storm's first events, each uncorrectable group's excerpt full."""
        storm = self.storm
        if places[0] < storm.limit or not all(self._counted_only(event) for event in events):
            for place, when in zip(places, whens, strict=True):
                for offset, event in enumerate(events):
                    self.add_at(place + offset, event, when)
            return
        ats = _all_seconds(whens)
        for offset, event in enumerate(events):
            run = Run(places[0] + offset, places[-1] + offset, whens, ats)
            severity = event.severity
            storm.add_run((event.device, severity, event.type, event.errors), run)
            bus = event.device or event.reporter
            reports = len(whens)
            self._bus(bus).add(
                severity, event.containment, reports, run.timed, run.earliest, run.latest
            )
            if severity != "corrected":  # its group is there: `_counted_only`
                self.uncorrected[(severity, bus)].add(reports, event.containment, event.errors)

    def _bus(self, bus: str | None) -> BusTally:
        tally = self.buses.get(bus)
        if tally is None:
            tally = self.buses[bus] = BusTally()
        return tally

    def _counted_only(self, event: AerEvent) -> bool:
        """Whether a later report of `event` changes only counts and times: corrected, or its
        uncorrectable group's excerpt is full (later places never enter it)."""
        if event.severity == "corrected":
            return True
        group = self.uncorrected.get((event.severity, event.device or event.reporter))
        return group is not None and len(group.first) >= EXCERPT


def _all_seconds(whens: list[str | None]) -> list[float | None]:
    """`_seconds` of each time: plain `dmesg` stamps read at once."""
    if all(when and when[0].isdigit() for when in whens):
        try:
            return list(map(float, whens))  # type: ignore[arg-type]
        except ValueError:
            pass
    return [_seconds(when) for when in whens]
