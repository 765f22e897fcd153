"""Pure parser for PCIe Advanced Error Reporting (AER) reports in the kernel log.

Reads `KernelLine`s (see `sitscheck.kernlog.lines`) as a stream and groups the lines of each
AER report into one `AerEvent`, in three steps:

- `wordings.read_message`: what one message says, in every wording kernels 2.6 .. 6.18 have
  printed (native AER, firmware-first CPER, DPC); each distinct message is read once (an error
  storm prints the same few over and over: a bounded memo);
- `reports.Reports`: which report each message belongs to, and when no later line can change
  a report;
- `resolve.Resolver`: the severity of a report whose lines do not say it, from the reports
  around it; the events go on to the sink (by default an `AerTally`, bounded), so a storm is
  parsed in bounded memory. `parse_aer` gives the whole list.

The grouping rules are those of the project's facts document (section "aer");
`AerEvent.to_fact()` gives exactly its keys plus `time`.
"""

from __future__ import annotations

from collections.abc import Iterable

from sitscheck.kernlog.anchor import Anchor
from sitscheck.kernlog.lines import KernelLine

from .check import KERNEL_LOG
from .events import CORRECTABLE_BITS, UNCORRECTABLE_BITS, AerEvent, DpcEvent, Severity
from .reports import Reports
from .resolve import Resolver, Sink
from .tally import AerTally
from .wordings import Said, might_be_aer, read_message

__all__ = [
    "AER_ANCHORS",
    "CORRECTABLE_BITS",
    "HEAD_LINES",
    "UNCORRECTABLE_BITS",
    "AerEvent",
    "AerLines",
    "DpcEvent",
    "Severity",
    "might_be_aer",
    "parse_aer",
]

# For the kernel-log scan (`kernlog.candidates`): every report begins with an "AER:" header
# (all kernels print it before the details) or a firmware-first "[Hardware Error]" record; the
# detail lines that carry neither word follow within a few lines. A detail block whose header
# lies before the start of the log is kept by `head_lines=HEAD_LINES`.
# The check declares them (its `KernelLogInterest`); the parser's tests read them from here.
AER_ANCHORS: tuple[Anchor, ...] = KERNEL_LOG.anchors
HEAD_LINES = KERNEL_LOG.head_lines

MAX_REMEMBERED = 4096  # distinct messages whose reading is remembered (`AerLines`)


def parse_aer(lines: Iterable[KernelLine]) -> list[AerEvent]:
    """Every AER report in `lines`, in the order each began."""
    found: dict[int, AerEvent] = {}
    handler = AerLines(found.__setitem__)
    for line in lines:
        handler.feed(line.body, line.time)
    handler.finish()
    return [found[index] for index in sorted(found)]


class AerLines:
    """The pcie_aer check's line handler in the one kernel-log pass (`KernelLogInterest`).

    Each report goes to `sink` with its place among the reports (by default to an `AerTally`,
    what `finish` returns) as soon as no later line can change it and its severity is known."""

    def __init__(self, sink: Sink | None = None) -> None:
        self.tally: AerTally | None = None
        if sink is None:
            self.tally = AerTally()
            sink = self.tally.add
        self._reports = Reports(Resolver(sink))
        self._said: dict[str, Said | None] = {}  # what each message says (`read_message`)

    def feed(self, body: str, time: str | None) -> None:
        """A line's message and time (`KernelLine.body`, `.time`)."""
        try:
            said = self._said[body]
        except KeyError:
            if len(self._said) >= MAX_REMEMBERED:
                self._said.clear()
            said = self._said[body] = read_message(body)
        if said is not None:
            self._reports.apply(said, time)

    def finish(self) -> AerTally | None:
        """The tally (None when the events went to a sink of the caller's)."""
        self._reports.finish()
        return self.tally
