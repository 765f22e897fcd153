"""Severity is never null: a report whose lines do not say it takes it from the log around it.

The report assembly (`reports.py`) hands each finished report on as a `Draft`, in the order
the reports began. A draft whose severity is known becomes its `AerEvent` at once. Else (a
status word or bit lines alone, a "no details" note, a DPC trigger of "unmasked uncorrectable
error") the `Resolver` takes it from the nearest report of the same device in the log's order
of reports (the later one first at equal distance; for an uncorrectable bit, the nearest
uncorrectable report); drafts are settled in order, each seeing the severities of those settled
before it, and only reports whose severity the log printed count after it. With nothing near:
corrected, or non-fatal for an uncorrectable one.

Events go to the sink with their place among the reports as soon as they are settled: only the
drafts of a device still waiting are held, with the last known report of each device (memory
grows with the devices, not the events).
"""

from __future__ import annotations

from collections.abc import Callable

from msgspec import Struct

from .events import AerEvent, Bits, DpcEvent, Severity, error_names
from .wordings import UNCORRECTABLE

# where the events go: each with its place among the reports (they may come out of order)
Sink = Callable[[int, AerEvent], None]
# a report's place and severity: the candidates the resolver weighs
Mark = tuple[int, Severity]
Marks = tuple[Mark | None, Mark | None]  # a device's latest report of any severity, uncorrectable

KNOWN: dict[str | None, Severity] = {
    "corrected": "corrected",
    "nonfatal": "nonfatal",
    "fatal": "fatal",
}


class Draft(Struct, frozen=True):
    """A finished report: its event once its severity is known. `severity` is the one its
    lines gave: one of `KNOWN`, else `UNCORRECTABLE` (fatality unknown) or None."""

    time: str | None
    reporter: str | None
    device: str | None
    vendor_device: str | None
    severity: str | None
    type: str | None
    multiple: bool
    status: tuple[int, int] | None  # the status word and its mask, where printed
    bits: Bits
    containment: bool  # a DPC containment report (`DpcEvent`)

    def event(self, severity: Severity) -> AerEvent:
        kind = DpcEvent if self.containment else AerEvent
        errors = error_names(severity, self.status, self.bits)
        return kind(
            self.reporter,
            self.device,
            self.vendor_device,
            severity,
            self.type,
            errors,
            self.multiple,
            self.time,
        )


class _Pending:
    """A draft waiting for the reports after it: the device's latest known reports when it
    came (`Marks`), and the first known ones after it, once seen."""

    __slots__ = ("after_any", "after_uncorrectable", "before_any", "before_uncorrectable",
                 "draft", "index")  # fmt: skip

    def __init__(self, index: int, draft: Draft, before: Marks) -> None:
        self.index = index
        self.draft = draft
        self.before_any, self.before_uncorrectable = before
        self.after_any: Mark | None = None
        self.after_uncorrectable: Mark | None = None


class Resolver:
    """The drafts in order of their reports (`push`), settled into events for `sink`."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.index = -1  # the place of the last report pushed
        self.known: dict[str, Marks] = {}  # device -> its latest reports of known severity
        self.settled: dict[str, Marks] = {}  # device -> its latest drafts settled
        self.waiting: dict[str, list[_Pending]] = {}  # device -> its drafts not yet settled

    def push(self, draft: Draft) -> None:
        """The next report."""
        self.index += 1
        index = self.index
        device = draft.device
        severity = KNOWN.get(draft.severity)
        if severity is not None:
            self.sink(index, draft.event(severity))
            if device is None:
                return
            self._know(device, index, severity)
        elif device is None:  # nothing near to take it from
            self._settle_as(index, draft, None)
        else:
            pending = _Pending(index, draft, self.known.get(device, (None, None)))
            self.waiting.setdefault(device, []).append(pending)
        if self.waiting:
            self._settle(final=False)

    def finish(self) -> None:
        """No report comes after: settle every draft."""
        self._settle(final=True)

    def _know(self, device: str, index: int, severity: Severity) -> None:
        """The device's report at `index` is of a known severity: the latest (and the latest
        uncorrectable, where it is), and the first after each draft of the device waiting."""
        mark = (index, severity)
        _, last_uncorrectable = self.known.get(device, (None, None))
        uncorrectable = severity != "corrected"
        self.known[device] = (mark, mark if uncorrectable else last_uncorrectable)
        for pending in self.waiting.get(device, ()):
            if pending.after_any is None:
                pending.after_any = mark
            if uncorrectable and pending.after_uncorrectable is None:
                pending.after_uncorrectable = mark

    def _settle(self, final: bool) -> None:
        for device in list(self.waiting):
            waiting = self.waiting[device]
            while waiting:
                found = self._severity(device, waiting[0], final)
                if found is None:
                    break
                pending = waiting.pop(0)
                self._settle_as(pending.index, pending.draft, found)
            if not waiting:
                del self.waiting[device]

    def _severity(self, device: str, pending: _Pending, final: bool) -> Severity | None:
        """The draft's severity, or None while the reports after it may still decide it."""
        uncorrectable = pending.draft.severity == UNCORRECTABLE
        settled_any, settled_uncorrectable = self.settled.get(device, (None, None))
        if uncorrectable:
            before = _later(pending.before_uncorrectable, settled_uncorrectable)
            after = pending.after_uncorrectable
        else:
            before = _later(pending.before_any, settled_any)
            after = pending.after_any
        index = pending.index
        if after is not None:
            if before is None or after[0] - index <= index - before[0]:
                return after[1]
            return before[1]
        # no known report after it yet: the one before decides once no later one can be nearer
        if before is not None and (final or self.index >= 2 * index - before[0]):
            return before[1]
        if final:
            return "nonfatal" if uncorrectable else "corrected"
        return None

    def _settle_as(self, index: int, draft: Draft, severity: Severity | None) -> None:
        if severity is None:  # no device: nothing near to take it from
            severity = "nonfatal" if draft.severity == UNCORRECTABLE else "corrected"
        if draft.device is not None:
            mark = (index, severity)
            _, last_uncorrectable = self.settled.get(draft.device, (None, None))
            uncorrectable = severity != "corrected"
            self.settled[draft.device] = (mark, mark if uncorrectable else last_uncorrectable)
        self.sink(index, draft.event(severity))


def _later(one: Mark | None, other: Mark | None) -> Mark | None:
    if one is None:
        return other
    if other is None:
        return one
    return one if one[0] > other[0] else other
