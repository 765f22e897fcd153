"""Pure parser for PCIe Advanced Error Reporting (AER) reports in the kernel log.

Reads `KernelLine`s (see `sitscheck.kernlog.lines`) as a stream and groups the lines of each
AER report into one `AerEvent`, in every wording the kernel has used:

- 2.6.32 .. 4.18: ``AER: Corrected error received: id=00e8`` headers, ``PCIe Bus Error:
  severity=Corrected, type=Physical Layer, id=00e8(Receiver ID)``, long bit names
  (``Receiver Error``, ``Replay Timer Timeout``, ...);
- 4.19 .. 6.7: ``AER: Corrected error received: 0000:00:1c.5`` and short bit names;
- 6.8+: ``AER: Correctable error message received from 0000:00:00.0`` (``(no details found``);
- firmware-first (APEI/GHES) ``{1}[Hardware Error]: ... section_type: PCIe error`` blocks and
  the ``aer_status: 0x.., aer_mask: 0x..`` / ``aer_layer=.., aer_agent=..`` lines the kernel
  prints for them;
- Downstream Port Containment: ``DPC: containment event, status:0x1f01 source:0x0000`` with
  its ``DPC: ERR_FATAL detected`` companion (4.19 .. 6.15; before 4.19 ``DPC containment event``
  printed by the ``dpc 0000:00:03.2:pcie008`` service device), and 6.16+'s one-line ``status:
  0x000d, ERR_FATAL received from 0000:02:00.0`` / ``status:0x0009: unmasked uncorrectable error
  detected``: one report, logged by the port that contained the link, whose ``PCIe Bus Error``
  block (if the kernel prints one) is its detail; EDR and hot-plug notes around it are not;
- copies with runs of whitespace collapsed, ``AER:`` before every detail line or not, 5-digit
  VMD domains.

Detail lines are matched to their report by the device prefix every one of them carries, so
other messages printed in between change nothing. Reports are handed on (`AerLines`'s sink,
by default a `tally.AerTally`) as soon as no later line can change them, so an error storm is
parsed in bounded memory; `parse_aer` gives the whole list. The grouping rules are those of
the project's facts document (section "aer"); `AerEvent.to_fact()` gives exactly its keys plus
`time`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Literal

from msgspec import Struct
from sitscheck.kernlog.anchor import Anchor
from sitscheck.kernlog.lines import KernelLine

from .check import KERNEL_LOG
from .tally import AerTally

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

Severity = Literal["corrected", "nonfatal", "fatal"]

CORRECTABLE_BITS: dict[int, str] = {
    0: "RxErr",
    6: "BadTLP",
    7: "BadDLLP",
    8: "Rollover",
    12: "Timeout",
    13: "NonFatalErr",
    14: "CorrIntErr",
    15: "HeaderOF",
}
UNCORRECTABLE_BITS: dict[int, str] = {
    0: "Undefined",
    4: "DLP",
    5: "SDES",
    12: "TLP",
    13: "FCP",
    14: "CmpltTO",
    15: "CmpltAbrt",
    16: "UnxCmplt",
    17: "RxOF",
    18: "MalfTLP",
    19: "ECRC",
    20: "UnsupReq",
    21: "ACSViol",
    22: "UncorrIntErr",
    23: "BlockedTLP",
    24: "AtomicOpBlocked",
    25: "TLPBlockedErr",
    26: "PoisonTLPBlocked",
    27: "DMWrReqBlocked",
    28: "IDECheck",
    29: "MisIDETLP",
    30: "PCRC_CHECK",
    31: "TLPXlatBlocked",
}
# the names kernels before 4.19 printed, and what they are called now
_LONG_NAMES: dict[str, str] = {
    "Receiver Error": "RxErr",
    "Bad TLP": "BadTLP",
    "Bad DLLP": "BadDLLP",
    "RELAY_NUM Rollover": "Rollover",
    "Replay Timer Timeout": "Timeout",
    "Advisory Non-Fatal": "NonFatalErr",
    "Corrected Internal Error": "CorrIntErr",
    "Header Log Overflow": "HeaderOF",
    "Data Link Protocol": "DLP",
    "Surprise Down Error": "SDES",
    "Poisoned TLP": "TLP",
    "Flow Control Protocol": "FCP",
    "Completion Timeout": "CmpltTO",
    "Completer Abort": "CmpltAbrt",
    "Unexpected Completion": "UnxCmplt",
    "Receiver Overflow": "RxOF",
    "Malformed TLP": "MalfTLP",
    "Unsupported Request": "UnsupReq",
    "ACS Violation": "ACSViol",
    "Uncorrectable Internal Error": "UncorrIntErr",
    "MC Blocked TLP": "BlockedTLP",
    "AtomicOp Egress Blocked": "AtomicOpBlocked",
    "TLP Prefix Blocked Error": "TLPBlockedErr",
    "Poisoned TLP Egress Blocked": "PoisonTLPBlocked",
}
_CORRECTABLE_NAMES = frozenset(CORRECTABLE_BITS.values())
_UNCORRECTABLE_NAMES = frozenset(UNCORRECTABLE_BITS.values())
_KNOWN_NAMES = _CORRECTABLE_NAMES | _UNCORRECTABLE_NAMES
_LAYERS = frozenset({"Physical Layer", "Data Link Layer", "Transaction Layer"})
_UNCORRECTABLE = "uncorrectable"  # a provisional severity: uncorrectable, fatality unknown

_BDF = r"(?:[0-9a-fA-F]{4,5}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
# the device prefix of a line ("nvidia 0000:98:00.0: "), the blanks and the "AER: " after it
# (before 4.19 a port service printed its own: "dpc 0000:00:03.2:pcie008: ")
_DEV_PREFIX = re.compile(r"\S+ (" + _BDF + r")(?::pcie\d{2,3})?:(?: |$)\s*(?:AER:\s*)?")
_HEADER = re.compile(
    r"(?P<multi>Multiple )?"
    r"(?P<sev>Corrected|Correctable|Uncorrect(?:ed|able) \((?:Non-)?Fatal\)) error "
    r"(?:message )?received(?::| from)?\s*"
    r"(?:id=(?P<id>[0-9a-fA-F]{1,4})|(?P<src>" + _BDF + r"))?"
)
_BUS_ERROR = re.compile(r"PCIe Bus Error:\s*severity=(?P<sev>[^,]+)(?:,\s*type=(?P<type>[^,]+))?")
_STATUS = re.compile(
    r"device \[(?P<vd>[0-9a-fA-F]{4}:[0-9a-fA-F]{4})\] error status/mask="
    r"(?P<status>[0-9a-fA-F]{1,8})/(?P<mask>[0-9a-fA-F]{1,8})"
)
_BIT = re.compile(r"\[\s*(?P<bit>\d{1,2})\]\s*(?P<name>.*)")
_NO_DETAILS = re.compile(
    r"(?:can't find device of ID\s*(?P<id>[0-9a-fA-F]{1,4})"
    r"|found no error details for\s*(?P<src>" + _BDF + r"))"
)
_AER_STATUS = re.compile(
    r"aer_(?P<which>cor_|uncor_)?status:\s*0x(?P<status>[0-9a-fA-F]{1,8}),\s*"
    r"aer_(?:cor_|uncor_)?mask:\s*0x(?P<mask>[0-9a-fA-F]{1,8})"
)
_AER_LAYER = re.compile(r"aer_layer=(?P<layer>[^,]+)")
_CPER = re.compile(r"(?:\{(?P<rec>\d+)\})?\[Hardware Error\]:\s?(?P<text>.*)")
_CPER_DEVICE = re.compile(r"device_id:\s*(?P<bdf>" + _BDF + r")")
# DPC (drivers/pci/pcie/dpc.c): "containment event, status:0x1f01 source:0x0000" (4.19 .. 6.15,
# "DPC containment event, ..." before), 6.16+ "containment event, status:0x000d, ERR_FATAL
# received from 0000:02:00.0" / "containment event, status:0x0009: unmasked uncorrectable error
# detected"; the companion "ERR_FATAL detected" ("..., remove downstream devices" before 4.19).
_DPC_EVENT = re.compile(
    r"containment event, status:\s*0x(?P<status>[0-9a-fA-F]{1,4})"
    r"(?:,? source:\s*0x[0-9a-fA-F]{1,4}"
    r"|, (?P<received>ERR_FATAL|ERR_NONFATAL) received from (?P<src>" + _BDF + r")"
    r"|: (?P<reason>[A-Za-z_ ]+?) detected)?"
)
_DPC_TRIGGER = re.compile(
    r"(?P<reason>unmasked uncorrectable error|ERR_FATAL|ERR_NONFATAL|RP PIO error"
    r"|software trigger|reserved error|extended error) (?:detected|triggered)\b"
)
_CPER_VENDOR = re.compile(
    r"vendor_id:\s*0x(?P<vendor>[0-9a-fA-F]{1,4}),\s*device_id:\s*0x(?P<device>[0-9a-fA-F]{1,4})"
)

_MAX_OPEN_HEADERS = 16
_MAX_OPEN_RECORDS = 16
_MAX_REMEMBERED = 4096  # distinct line bodies remembered per parse (`_AerState.said`)
_FLUSH_EVERY = 64  # new reports between two looks for the ones done (`_AerState.flush`)
_MAX_HELD = 4096  # reports held behind the oldest one still open, at most

# For `iter_candidate_lines`: every report begins with an "AER:" header (all kernels print it
# before the details) or a firmware-first "[Hardware Error]" record; the detail lines that carry
# neither word follow within a few lines. A detail block whose header lies before the start of
# the log is kept by `head_lines=HEAD_LINES`.
# The check declares them (its `KernelLogInterest`); the parser's tests read them from here.
AER_ANCHORS: tuple[Anchor, ...] = KERNEL_LOG.anchors
HEAD_LINES = KERNEL_LOG.head_lines


class AerEvent(Struct, frozen=True):
    """One AER report: the facts of the project's "aer" section, plus when it began."""

    reporter: str | None
    device: str | None
    vendor_device: str | None
    severity: Severity
    type: str | None
    errors: tuple[str, ...]
    multiple: bool
    time: str | None = None
    # a DPC containment report: the port took the link down (not a fact key; `DpcEvent`)
    containment: ClassVar[bool] = False

    def at(self, time: str | None) -> AerEvent:
        """The same report begun at `time` (itself where it did)."""
        if self.time == time:
            return self
        return _new_event(
            self.reporter,
            self.device,
            self.vendor_device,
            self.severity,
            self.type,
            self.errors,
            self.multiple,
            time,
            self.containment,
        )

    def to_fact(self) -> dict[str, object]:
        return {
            "reporter": self.reporter,
            "device": self.device,
            "vendor_device": self.vendor_device,
            "severity": self.severity,
            "type": self.type,
            "errors": list(self.errors),
            "multiple": self.multiple,
            "time": self.time,
        }


class DpcEvent(AerEvent, frozen=True):
    """An AER report that is a Downstream Port Containment: its port disabled the link."""

    containment: ClassVar[bool] = True


def _new_event(
    reporter: str | None,
    device: str | None,
    vendor_device: str | None,
    severity: Severity,
    type_: str | None,
    errors: tuple[str, ...],
    multiple: bool,
    time: str | None,
    containment: bool,
) -> AerEvent:
    kind = DpcEvent if containment else AerEvent
    return kind(reporter, device, vendor_device, severity, type_, errors, multiple, time)


def might_be_aer(raw_line: str) -> bool:
    """Cheap substring test: False only for lines `parse_aer` never needs (raw or body).

    "Error" stands for "PCIe Bus Error" and "[Hardware Error]", "DPC" for a containment report;
    the rest are the detail lines some kernels print without "AER:" (status word, bit lines, the
    4.x "can't find" note).
    """
    if "AER" in raw_line or "Error" in raw_line or "status/mask" in raw_line:
        return True
    if "DPC" in raw_line:
        return True
    if "aer_" in raw_line or "find device of ID" in raw_line:
        return True
    if ":    [" in raw_line or ":  [" in raw_line:  # bit lines of 4.x+ and of 2.6/3.x
        return True
    at = raw_line.find(": [")
    return at >= 0 and _has_bit_index(raw_line, at)


def _has_bit_index(raw_line: str, at: int) -> bool:
    """A whitespace-collapsed bit line: ": [14] CmpltTO" / ": [ 0] RxErr" / ": [0] RxErr"."""
    while at >= 0:
        window = raw_line[at + 3 : at + 6]
        if len(window) >= 2 and window[0] in " 0123456789":
            if window[1].isdigit() and window[2:3] == "]":
                return True
            if window[0] != " " and window[1] == "]":
                return True
        at = raw_line.find(": [", at + 3)
    return False


def parse_aer(lines: Iterable[KernelLine]) -> list[AerEvent]:
    """Every AER report in `lines`, in the order each began."""
    found: dict[int, AerEvent] = {}

    def keep(index: int, event: AerEvent, time: str | None) -> None:
        found[index] = event.at(time)

    handler = AerLines(keep)
    for line in lines:
        handler.feed(line.body, line.time)
    handler.finish()
    return [found[index] for index in sorted(found)]


# An event and its place in the log, and the time it began: the event given may be one shared
# by the reports it stands for, with another time (`at` makes the event of this one), so that
# an error storm's reports are not each made into an object.
Sink = Callable[[int, AerEvent, str | None], None]
# The same for a run of reports that differ only in their time (the same events): the place of
# each report's first event, rising, and each one's time. `AerTally.add_run` counts them at once.
RunSink = Callable[[list[int], tuple[AerEvent, ...], list[str | None]], None]


class AerLines:
    """The pcie_aer check's line handler in the one kernel-log pass (`KernelLogInterest`).

    Each report is handed to `sink` (by default an `AerTally`, what `finish` returns) as soon
    as no later line can change it, with its place in the log: memory holds the reports still
    open, not those done.

    A report's lines are read at once where they can be (an error storm prints the same few
    reports over and over): from its header line on, its detail lines are held (`_Lane`);
    when the next header line of the same port ends it, no later line can change it, and
    the events its lines make (from no other state: `_lone_events`, remembered for each
    sequence of lines) go on as one slot (`_Done`). Any other line first applies the lines
    held, one by one, as they came: the state is then what it would have been."""

    def __init__(self, sink: Sink | None = None) -> None:
        self.tally: AerTally | None = None
        if sink is None:
            self.tally = AerTally()
            sink = self.tally.add_at
        self._state = _AerState(_Resolver(sink, self.tally.add_run if self.tally else None))
        self._said = self._state.said
        self._lane: _Lane | None = None
        self._alone: dict[tuple[_Line, ...], tuple[AerEvent, ...] | None] = {}

    def feed(self, body: str, time: str | None) -> None:
        """A line's message and time (`KernelLine.body`, `.time`)."""
        said = self._said.get(body)
        if said is None:
            said = self._state.remember(body)
        lane = self._lane
        if lane is not None:
            kind = type(said)
            if kind in _DETAIL_LINES and len(lane.times) < _MAX_LANE:
                lane.lines.append(said)
                lane.times.append(time)
                return
            if said is _NOTHING:
                return
            self._lane = None
            if not isinstance(said, _HeaderLine) or not self._done(lane, said):
                self._undo(lane)
        if type(said) is _HeaderLine:
            # what the header line does to the other reports, at once (its own header is made
            # when its lines are applied, where they are)
            self._state.make_room(said.reporter)
            self._lane = _Lane(said, time)
            return
        self._apply(said, time)

    def finish(self) -> AerTally | None:
        """The tally (None when the events went to a sink of the caller's)."""
        if self._lane is not None:
            self._undo(self._lane)
            self._lane = None
        self._state.flush(final=True)
        return self.tally

    def _apply(self, said: _Line, time: str | None) -> None:
        state = self._state
        said.apply(state, time)
        if len(state.slots) >= state.flush_at:
            state.flush()

    def _undo(self, lane: _Lane) -> None:
        """Apply the lines held, as they came."""
        for said, time in zip(lane.lines, lane.times, strict=True):
            self._apply(said, time)

    def _done(self, lane: _Lane, header: _HeaderLine) -> bool:
        """Whether the report of `lane`, ended by the next header line `header`, went on as
        its lone events: where its port is the same, that line leaves nothing of the report
        open (its header is replaced, its blocks are closed), whatever the state was."""
        if header.reporter != lane.reporter:
            return False
        key = tuple(lane.lines)
        events = self._alone.get(key, _UNSEEN)
        if events is _UNSEEN:
            if len(self._alone) >= _MAX_REMEMBERED:
                self._alone.clear()
            events = self._alone[key] = _lone_events(key, self._state.names)
        if events is None:
            return False
        state = self._state
        state.slots.append(_Done(events, lane.times[0]))
        if len(state.slots) >= state.flush_at:
            state.flush()
        return True


# ---------------------------------------------------------------------------------------------
# building blocks (mutable while the stream is read; turned into AerEvents at the end)


class _Header:
    """A "... error received" line: the port that logged a report, and its detail blocks."""

    __slots__ = (
        "blocks",
        "domain",
        "dpc",
        "multiple",
        "reporter",
        "severity",
        "source",
        "source_id",
        "time",
    )

    def __init__(self, reporter: str | None, domain: str | None, time: str | None) -> None:
        self.reporter = reporter
        self.domain = domain  # the reporter's PCI domain
        self.time = time
        self.severity: str | None = None
        self.multiple = False
        self.source: str | None = None
        self.source_id: int | None = None
        self.blocks: list[_Block] = []
        self.dpc: _DpcState | None = None  # a containment report: its trigger, once known


_Bits = tuple[tuple[int, str | None], ...]  # a block's bit lines: index and name, as printed


class _Block:
    """The detail lines printed for one device: severity/type, status/mask, bits."""

    __slots__ = (
        "bits",
        "bus_line",
        "device",
        "layer",
        "mask",
        "severity",
        "status",
        "time",
        "type",
        "uncorrectable_hint",
        "vendor_device",
    )

    def __init__(self, device: str | None, time: str | None) -> None:
        self.device = device
        self.time = time
        self.bus_line = False
        self.severity: str | None = None
        self.type: str | None = None
        self.layer: str | None = None
        self.vendor_device: str | None = None
        self.status: int | None = None
        self.mask = 0
        self.bits: _Bits = ()
        self.uncorrectable_hint = False

    def has_details(self) -> bool:
        return self.bus_line or self.status is not None or bool(self.bits)


class _Record:
    """One firmware-first CPER record ({N}[Hardware Error]: ...)."""

    __slots__ = ("current", "event_severity", "section_severity", "time")

    def __init__(self, time: str | None) -> None:
        self.time = time
        self.event_severity: str | None = None
        self.section_severity: str | None = None
        self.current: _Section | None = None


class _Section:
    """One "section_type: PCIe error" section of a CPER record."""

    __slots__ = (
        "cor",
        "device",
        "layer",
        "merged",
        "record",
        "severity",
        "status",
        "time",
        "uncor",
        "vendor_device",
    )

    def __init__(self, record: _Record) -> None:
        self.record = record
        self.time = record.time
        self.severity = record.section_severity or record.event_severity
        self.device: str | None = None
        self.vendor_device: str | None = None
        self.status: tuple[int, int] | None = None
        self.cor: tuple[int, int] | None = None
        self.uncor: tuple[int, int] | None = None
        self.layer: str | None = None
        self.merged: _Block | None = None


class _Done:
    """A report read at once (`AerLines`): its events, without their time, and its time."""

    __slots__ = ("events", "time")

    def __init__(self, events: tuple[AerEvent, ...], time: str | None) -> None:
        self.events = events
        self.time = time


class _Lane:
    """A report's header line and the detail lines after it, held (`AerLines`): the lines
    and their times, the header's first."""

    __slots__ = ("lines", "reporter", "times")

    def __init__(self, header: _HeaderLine, time: str | None) -> None:
        self.reporter = header.reporter
        self.lines: list[_Line] = [header]
        self.times: list[str | None] = [time]


_MAX_LANE = 64  # lines held in a lane (its header line's and the detail lines), at most
_UNSEEN: Any = object()


def _lone_events(lines: tuple[_Line, ...], names: _Names) -> tuple[AerEvent, ...] | None:
    """The events a header line and its detail lines make from no other state (None unless
    they make one report of known severity). Its detail lines join its own header whatever
    the state (it is the newest open header and has no block yet; the header lines before
    it may only be told apart by the severity and domain, which the lines themselves say)."""
    state = _AerState(_Resolver(lambda index, event, time: None))
    for said in lines:
        said.apply(state, None)
    if len(state.slots) != 1 or state.records or state.sections_by_device:
        return None
    (header,) = state.slots
    if not isinstance(header, _Header):
        return None
    events: list[AerEvent] = []
    for item in [_block_item(block, header, names) for block in header.blocks] or [
        _header_item(header, names)
    ]:
        if not isinstance(item, AerEvent):
            return None  # a draft: its severity is the reports' around it
        events.append(item)
    return tuple(events)


_Slot = _Header | _Block | _Section | _Done


class _AerState:
    """The stream state: reports in order of their first line, and what is still open."""

    def __init__(self, resolver: _Resolver) -> None:
        self.resolver = resolver
        self.slots: list[_Slot] = []  # reports not yet handed on, in order of their first line
        self.flush_at = _FLUSH_EVERY
        self.open_blocks: dict[str | None, _Block] = {}
        self.open_headers: dict[str | None, _Header] = {}  # by reporter, oldest first
        self.records: dict[str, _Record] = {}
        # per device, its CPER sections the kernel has not printed yet, oldest first (the kernel
        # prints them in the order the firmware reported them: aer_recover_queue is a FIFO)
        self.sections_by_device: dict[str, list[_Section]] = {}
        self.said: dict[str, _Line] = {}  # what each line body says (`_parse_line`), remembered
        self.names: _Names = {}  # the events met, but for their times (`_item`)

    # -- reading -------------------------------------------------------------------------------

    def open_header(self, header: _Header) -> None:
        """A new report: the detail lines after it start its blocks."""
        self.make_room(header.reporter)
        self.open_headers[header.reporter] = header
        self.slots.append(header)

    def make_room(self, reporter: str | None) -> None:
        """What a new report's header does to the others: every open block is done, so is the
        report of its port before it, and the oldest open header where all are taken."""
        self.open_blocks.clear()
        headers = self.open_headers
        headers.pop(reporter, None)
        if len(headers) >= _MAX_OPEN_HEADERS:
            del headers[next(iter(headers))]

    def remember(self, body: str) -> _Line:
        """What a line body says, parsed and remembered (the lines of a report recur verbatim
        in an error storm)."""
        if len(self.said) >= _MAX_REMEMBERED:
            self.said.clear()
        said = self.said[body] = _parse_line(body)
        return said

    def start_block(self, said: _DetailLine, time: str | None, severity: str | None) -> _Block:
        device = said.device
        block = _Block(device, time)
        header = self._header_for(said, severity)
        if header is not None:
            header.blocks.append(block)
        else:
            self.slots.append(block)
        self.open_blocks[device] = block
        return block

    def _header_for(self, said: _DetailLine, severity: str | None) -> _Header | None:
        """The newest open header a new block of the line's device belongs to: not of the other
        severity class (corrected / uncorrectable), not logged in another PCI domain, and with
        no block of the device yet."""
        device, domain = said.device, said.domain
        corrected = severity == "corrected"
        for header in reversed(self.open_headers.values()):
            if severity is not None and header.severity is not None:
                if corrected != (header.severity == "corrected"):
                    continue
            if domain is not None and header.domain is not None and domain != header.domain:
                continue
            for block in header.blocks:
                if block.device == device:
                    break
            else:
                return header
        return None

    def cper(self, body: str, time: str | None) -> None:
        match = _CPER.search(body)
        if match is None or not body.lstrip().startswith(("{", "[Hardware Error]")):
            return
        key = match.group("rec") or ""
        text = match.group("text").strip()
        record = self.records.get(key)
        if record is None or text.startswith("Hardware error from"):
            record = _Record(time)
            self.records.pop(key, None)
            self.records[key] = record
            if len(self.records) > _MAX_OPEN_RECORDS:  # {N} grows with every record
                del self.records[next(iter(self.records))]
        _cper_field(self, record, text)

    # -- results -------------------------------------------------------------------------------

    def flush(self, final: bool = False) -> None:
        """Hand on the reports no later line can change, from the oldest (all of them when
        `final`). A report held open while `_MAX_HELD` later ones are done is closed: a line
        that would still have joined it then starts a report of its own."""
        slots = self.slots
        if final:
            done = len(slots)
        else:
            live = self._live()
            done = 0
            # a `_Done` slot is never live: nothing of its report is open
            while done < len(slots) and (
                type(slots[done]) is _Done or not _is_live(slots[done], live)
            ):
                done += 1
            while done == 0 and len(slots) > _MAX_HELD:
                self._close(slots[0])
                live = self._live()
                while done < len(slots) and not _is_live(slots[done], live):
                    done += 1
        resolver = self.resolver
        push = resolver.push
        names = self.names
        read: list[_Done] = []  # the reports read at once just met, pushed together
        for slot in slots[:done]:
            if isinstance(slot, _Done):
                read.append(slot)
                continue
            if read:
                resolver.push_done(read)
                read = []
            if isinstance(slot, _Header):
                for block in slot.blocks:
                    push(_block_item(block, slot, names), slot.time)
                if not slot.blocks:
                    push(_header_item(slot, names), slot.time)
            elif isinstance(slot, _Block):
                push(_block_item(slot, None, names), slot.time)
            else:
                push(_section_item(slot, names), slot.time)
        if read:
            resolver.push_done(read)
        del slots[:done]
        self.flush_at = len(slots) + _FLUSH_EVERY
        if final:
            resolver.finish()

    def _live(self) -> set[int]:
        """The ids of the reports a later line may still change."""
        live = {id(header) for header in self.open_headers.values()}
        live.update(id(block) for block in self.open_blocks.values())
        live.update(id(r.current) for r in self.records.values() if r.current is not None)
        for waiting in self.sections_by_device.values():
            live.update(id(section) for section in waiting)
        return live

    def _close(self, slot: _Slot) -> None:
        """Let no later line change `slot`."""
        if isinstance(slot, _Header):
            if self.open_headers.get(slot.reporter) is slot:
                del self.open_headers[slot.reporter]
            blocks = slot.blocks
        elif isinstance(slot, _Block):
            blocks = [slot]
        elif isinstance(slot, _Done):
            return  # done: nothing of it is open
        else:
            for record in self.records.values():
                if record.current is slot:
                    record.current = None
            for waiting in self.sections_by_device.values():
                if slot in waiting:
                    waiting.remove(slot)
            blocks = [slot.merged] if slot.merged is not None else []
        for block in blocks:
            if self.open_blocks.get(block.device) is block:
                del self.open_blocks[block.device]


def _is_live(slot: _Slot, live: set[int]) -> bool:
    if id(slot) in live:
        return True
    if isinstance(slot, _Header):
        for block in slot.blocks:
            if id(block) in live:
                return True
        return False
    if isinstance(slot, _Section):
        return slot.merged is not None and id(slot.merged) in live
    return False


# ---------------------------------------------------------------------------------------------
# what one line says: parsed once per distinct body (a report's lines recur verbatim in an error
# storm), then applied to the stream state for each line that says it


def _parse_line(body: str) -> _Line:
    if not might_be_aer(body):
        return _NOTHING
    if "[Hardware Error]" in body:
        return _CperLine(body)
    prefix = _DEV_PREFIX.match(body)
    device: str | None
    if prefix is not None:
        device = _normalise_bdf(prefix.group(1))
        rest = body[prefix.end() :]
    else:
        device = None
        rest = body.lstrip()
        if rest.startswith("AER:"):
            rest = rest[4:].lstrip()
    if rest.startswith("["):
        return _BitLine.parse(device, rest)
    if rest.startswith("PCIe Bus Error"):
        return _BusErrorLine.parse(device, rest)
    if rest.startswith("device ["):
        return _StatusLine.parse(device, rest)
    if rest.startswith("DPC"):
        return _parse_dpc(device, rest)
    if "received" in rest:
        return _HeaderLine.parse(device, rest)
    if rest.startswith(("can't find device", "found no error details")):
        return _NoDetailsLine.parse(device, rest)
    if rest.startswith("aer_"):
        return _parse_ghes(device, rest)
    return _NOTHING


class _Nothing:
    """A line that is no part of an AER report (or one this parser does not read)."""

    __slots__ = ()

    def apply(self, state: _AerState, time: str | None) -> None:
        pass


class _CperLine:
    """A firmware-first "{N}[Hardware Error]: ..." line: read with its record's state."""

    __slots__ = ("body",)

    def __init__(self, body: str) -> None:
        self.body = body

    def apply(self, state: _AerState, time: str | None) -> None:
        state.cper(self.body, time)


_NOTHING = _Nothing()


class _HeaderLine:
    """A "... error received" line: a new report, with no detail block yet."""

    __slots__ = ("domain", "multiple", "reporter", "severity", "source", "source_id")

    def __init__(self, reporter: str | None, match: re.Match[str]) -> None:
        self.reporter = reporter
        self.domain = _domain(reporter)
        self.severity = _severity_word(match.group("sev"))
        self.multiple = match.group("multi") is not None
        self.source: str | None = None
        self.source_id: int | None = None
        if match.group("src"):
            self.source = _normalise_bdf(match.group("src"))
            self.source_id = _bdf_id(self.source)
        elif match.group("id"):
            self.source_id = int(match.group("id"), 16)

    @staticmethod
    def parse(reporter: str | None, rest: str) -> _Line:
        match = _HEADER.search(rest)
        return _NOTHING if match is None else _HeaderLine(reporter, match)

    def apply(self, state: _AerState, time: str | None) -> None:
        header = _Header(self.reporter, self.domain, time)
        header.severity = self.severity
        header.multiple = self.multiple
        header.source = self.source
        header.source_id = self.source_id
        state.open_header(header)


class _DpcState:
    """What a containment report said of its trigger: whether the line naming it was read."""

    __slots__ = ("named",)

    def __init__(self, named: bool) -> None:
        self.named = named


# the severity a DPC trigger reason gives a report with no detail block (facts: "unmasked
# uncorrectable error" leaves it to the rest of the log, else non-fatal)
_DPC_SEVERITY: dict[str, str] = {
    "ERR_FATAL": "fatal",
    "ERR_NONFATAL": "nonfatal",
    "unmasked uncorrectable error": _UNCORRECTABLE,
}
# DPC Status register, Trigger Reason (bits 2:1): 0 unmasked uncorrectable error, 1
# ERR_NONFATAL, 2 ERR_FATAL, 3 an extension (RP PIO error, software trigger)
_DPC_STATUS_REASON = ("unmasked uncorrectable error", "ERR_NONFATAL", "ERR_FATAL", "extension")


def _dpc_severity(reason: str) -> str:
    return _DPC_SEVERITY.get(reason, "nonfatal")


def _parse_dpc(port: str | None, rest: str) -> _Line:
    """A DPC line: a containment report (or its companion line), else nothing (the recovery,
    RP PIO and capability lines)."""
    text = rest[4:].lstrip() if rest.startswith(("DPC:", "DPC ")) else rest
    event = _DPC_EVENT.match(text)
    if event is not None:
        reason = event.group("received") or event.group("reason")
        named = reason is not None
        if reason is None:  # the companion line says it; meanwhile the status word does
            reason = _DPC_STATUS_REASON[(int(event.group("status"), 16) >> 1) & 3]
        source = _normalise_bdf(event.group("src")) if event.group("src") else None
        return _DpcEventLine(port, _dpc_severity(reason.strip()), named, source)
    trigger = _DPC_TRIGGER.match(text)
    if trigger is not None:
        return _DpcTriggerLine(port, _dpc_severity(trigger.group("reason")))
    return _NOTHING


class _DpcEventLine:
    """ "DPC: containment event, status:0x1f01 source:0x0000": a report of the printing port; a
    raw source id is like the header's id= (no device), "received from B" names it."""

    __slots__ = ("domain", "named", "port", "severity", "source")

    def __init__(self, port: str | None, severity: str, named: bool, source: str | None) -> None:
        self.port = port
        self.domain = _domain(port)
        self.severity = severity
        self.named = named
        self.source = source

    def apply(self, state: _AerState, time: str | None) -> None:
        header = _Header(self.port, self.domain, time)
        header.severity = self.severity
        header.source = self.source
        header.dpc = _DpcState(self.named)
        state.open_header(header)


class _DpcTriggerLine:
    """ "DPC: ERR_FATAL detected": names the trigger of the port's containment report just
    printed; one whose report line was cut off stands for it."""

    __slots__ = ("domain", "port", "severity")

    def __init__(self, port: str | None, severity: str) -> None:
        self.port = port
        self.domain = _domain(port)
        self.severity = severity

    def apply(self, state: _AerState, time: str | None) -> None:
        header = state.open_headers.get(self.port)
        if header is not None and header.dpc is not None and not header.dpc.named:
            header.severity = self.severity
            header.dpc.named = True
            return
        orphan = _Header(self.port, self.domain, time)
        orphan.severity = self.severity
        orphan.dpc = _DpcState(True)
        state.open_header(orphan)


class _NoDetailsLine:
    """ "can't find device of ID00e5" / "found no error details for 0000:00:1c.5"."""

    __slots__ = ("domain", "reporter", "source", "source_id")

    def __init__(self, reporter: str | None, match: re.Match[str] | None) -> None:
        self.reporter = reporter
        self.domain = _domain(reporter)
        self.source: str | None = None
        self.source_id: int | None = None
        if match is not None and match.group("id"):
            self.source_id = int(match.group("id"), 16)
        elif match is not None and match.group("src"):
            self.source = _normalise_bdf(match.group("src"))
            self.source_id = _bdf_id(self.source)

    @staticmethod
    def parse(reporter: str | None, rest: str) -> _Line:
        return _NoDetailsLine(reporter, _NO_DETAILS.match(rest))

    def apply(self, state: _AerState, time: str | None) -> None:
        header = state.open_headers.get(self.reporter)
        if header is not None and not header.blocks:
            if header.source_id is None or header.source_id == self.source_id:
                return  # the header's own "no details" note: part of its event
        # its header was cut off: the note stands for it
        orphan = _Header(self.reporter, self.domain, time)
        orphan.source = self.source
        orphan.source_id = self.source_id
        state.slots.append(orphan)


class _DetailLine:
    """A line of one device's detail block."""

    __slots__ = ("device", "domain")

    def __init__(self, device: str | None) -> None:
        self.device = device
        self.domain = _domain(device)


class _BusErrorLine(_DetailLine):
    """ "PCIe Bus Error: severity=Correctable, type=Physical Layer, ...": a device's block."""

    __slots__ = ("has_type", "severity", "type")

    def __init__(self, device: str | None, match: re.Match[str] | None) -> None:
        super().__init__(device)
        self.severity = _severity_word(match.group("sev")) if match else None
        self.has_type = bool(match and match.group("type"))
        self.type: str | None = None
        if match and match.group("type"):
            layer = match.group("type").strip()
            self.type = layer if layer in _LAYERS else None

    @staticmethod
    def parse(device: str | None, rest: str) -> _Line:
        return _BusErrorLine(device, _BUS_ERROR.match(rest))

    def apply(self, state: _AerState, time: str | None) -> None:
        block = state.open_blocks.get(self.device)
        if block is None or block.has_details():
            block = state.start_block(self, time, self.severity)
        block.bus_line = True
        block.severity = self.severity
        if self.has_type:
            block.type = self.type


class _StatusLine(_DetailLine):
    """ "device [10de:2335] error status/mask=00000001/0000e000"."""

    __slots__ = ("mask", "status", "vendor_device")

    def __init__(self, device: str | None, match: re.Match[str]) -> None:
        super().__init__(device)
        self.vendor_device = match.group("vd").lower()
        self.status = int(match.group("status"), 16)
        self.mask = int(match.group("mask"), 16)

    @staticmethod
    def parse(device: str | None, rest: str) -> _Line:
        match = _STATUS.match(rest)
        return _NOTHING if match is None else _StatusLine(device, match)

    def apply(self, state: _AerState, time: str | None) -> None:
        block = state.open_blocks.get(self.device)
        if block is None or block.status is not None or block.bits:
            block = state.start_block(self, time, None)
        block.vendor_device = self.vendor_device
        block.status = self.status
        block.mask = self.mask


class _BitLine(_DetailLine):
    """ "[ 0] RxErr  (First)": one bit of the status word, by index and (current) name."""

    __slots__ = ("bit", "bits")

    def __init__(self, device: str | None, match: re.Match[str]) -> None:
        super().__init__(device)
        self.bit = (int(match.group("bit")), _bit_name(match.group("name")))
        self.bits: _Bits = (self.bit,)  # a block's first bit: its bits, shared with no copy

    @staticmethod
    def parse(device: str | None, rest: str) -> _Line:
        match = _BIT.match(rest)
        return _NOTHING if match is None else _BitLine(device, match)

    def apply(self, state: _AerState, time: str | None) -> None:
        block = state.open_blocks.get(self.device)
        if block is None or (block.bits and self.bit[0] <= block.bits[-1][0]):
            block = state.start_block(self, time, None)
        block.bits += self.bits


def _parse_ghes(device: str | None, rest: str) -> _Line:
    """The kernel's own print of a firmware-first report (pci_print_aer)."""
    status = _AER_STATUS.match(rest)
    if status is not None:
        return _GhesStatusLine(device, status)
    layer = _AER_LAYER.match(rest)
    if layer is not None:
        return _GhesLayerLine(device, layer.group("layer").strip())
    if rest.startswith("aer_uncor_severity"):
        return _GhesSeverityLine(device)
    return _NOTHING


class _GhesStatusLine:
    """ "aer_status: 0x.., aer_mask: 0x..": joins the CPER section printed for the device."""

    __slots__ = ("device", "mask", "status")

    def __init__(self, device: str | None, match: re.Match[str]) -> None:
        self.device = device
        self.status = int(match.group("status"), 16)
        self.mask = int(match.group("mask"), 16)

    def apply(self, state: _AerState, time: str | None) -> None:
        block = _Block(self.device, time)
        block.bus_line = True
        block.status = self.status
        block.mask = self.mask
        waiting = state.sections_by_device.get(self.device) if self.device else None
        if waiting:
            waiting.pop(0).merged = block  # the oldest section of the device not yet printed
        else:
            state.slots.append(block)
        state.open_blocks[self.device] = block


class _GhesLayerLine:
    """ "aer_layer=Transaction Layer, aer_agent=Receiver ID"."""

    __slots__ = ("device", "layer")

    def __init__(self, device: str | None, layer: str) -> None:
        self.device = device
        self.layer = layer

    def apply(self, state: _AerState, time: str | None) -> None:
        block = state.open_blocks.get(self.device)
        if block is not None:
            block.layer = self.layer


class _GhesSeverityLine:
    """ "aer_uncor_severity: 0x...": the block is of an uncorrectable error."""

    __slots__ = ("device",)

    def __init__(self, device: str | None) -> None:
        self.device = device

    def apply(self, state: _AerState, time: str | None) -> None:
        block = state.open_blocks.get(self.device)
        if block is not None:
            block.uncorrectable_hint = True


_Line = (
    _Nothing
    | _CperLine
    | _HeaderLine
    | _DpcEventLine
    | _DpcTriggerLine
    | _NoDetailsLine
    | _BusErrorLine
    | _StatusLine
    | _BitLine
    | _GhesStatusLine
    | _GhesLayerLine
    | _GhesSeverityLine
)
# the lines of a device's detail block: held after a header line (`AerLines`)
_DETAIL_LINES = (_BusErrorLine, _StatusLine, _BitLine)


def _cper_field(state: _AerState, record: _Record, text: str) -> None:
    """One line of a CPER record."""
    if text.startswith("event severity:"):
        record.event_severity = _cper_severity(text.partition(":")[2])
    elif text.startswith("Error ") and "type:" in text:
        record.section_severity = _cper_severity(text.partition("type:")[2])
        record.current = None
    elif text.startswith("section_type:"):
        record.current = None
        if "PCIe error" in text:
            record.current = _Section(record)
            state.slots.append(record.current)
    elif record.current is not None:
        _cper_section_field(state, record.current, text)


def _cper_section_field(state: _AerState, section: _Section, text: str) -> None:
    if text.startswith("device_id:"):
        device = _CPER_DEVICE.match(text)
        if device is not None:
            section.device = _normalise_bdf(device.group("bdf"))
            waiting = state.sections_by_device.setdefault(section.device, [])
            waiting.append(section)
            if len(waiting) > _MAX_OPEN_RECORDS:
                del waiting[0]
    elif text.startswith("vendor_id:"):
        vendor = _CPER_VENDOR.match(text)
        if vendor is not None:
            section.vendor_device = (
                f"{int(vendor.group('vendor'), 16):04x}:{int(vendor.group('device'), 16):04x}"
            )
    elif text.startswith("aer_"):
        status = _AER_STATUS.match(text)
        if status is not None:
            pair = (int(status.group("status"), 16), int(status.group("mask"), 16))
            which = status.group("which")
            if which == "cor_":
                section.cor = pair
            elif which == "uncor_":
                section.uncor = pair
            else:
                section.status = pair
        layer = _AER_LAYER.match(text)
        if layer is not None:
            section.layer = layer.group("layer").strip()


# ---------------------------------------------------------------------------------------------
# events: made at once when their severity is known, else drafts resolved from context

_KNOWN_SEVERITY: dict[str | None, Severity] = {
    "corrected": "corrected",
    "nonfatal": "nonfatal",
    "fatal": "fatal",
}


class _Draft(Struct):
    """An event in the making: `item()` is the event once its severity is known, else the
    draft, whose severity is provisional (`_UNCORRECTABLE` or None) until
    `_Resolver` takes it from the reports around it."""

    time: str | None
    reporter: str | None
    device: str | None
    vendor_device: str | None
    severity: str | None
    type: str | None
    multiple: bool
    status: tuple[int, int] | None
    bits: _Bits
    containment: bool = False

    def item(self) -> _Item:
        known = _KNOWN_SEVERITY.get(self.severity)
        return self if known is None else self._event(known)

    def event(self) -> AerEvent:
        return self._event(_final_severity(self.severity))

    def _event(self, severity: Severity) -> AerEvent:
        errors = _errors(severity, self.status, self.bits)
        return _new_event(
            self.reporter,
            self.device,
            self.vendor_device,
            severity,
            self.type,
            errors,
            self.multiple,
            self.time,
            self.containment,
        )


_Item = AerEvent | _Draft
# the events met in a parse, each without its time, by what makes them (`_item`)
_Names = dict[tuple[Any, ...], AerEvent]


def _item(
    time: str | None,
    reporter: str | None,
    device: str | None,
    vendor_device: str | None,
    severity: str | None,
    type_: str | None,
    multiple: bool,
    status: tuple[int, int] | None,
    bits: _Bits,
    containment: bool,
    names: _Names,
) -> _Item:
    """The event, once its severity is known, without its time (the report's time goes with
    it to the sink: `Sink`); else its draft, timed (`_Draft.item`, without the draft made
    first). The events are remembered in `names` (a storm's reports differ in their times
    alone: each is made once, its error names decoded once)."""
    known = _KNOWN_SEVERITY.get(severity)
    if known is None:
        return _Draft(
            time, reporter, device, vendor_device, severity, type_, multiple, status, bits,
            containment,
        )  # fmt: skip
    key = (reporter, device, vendor_device, known, type_, multiple, status, bits, containment)
    event = names.get(key)
    if event is None:
        if len(names) >= _MAX_REMEMBERED:
            names.clear()
        errors = _errors(known, status, bits)
        event = names[key] = _new_event(
            reporter, device, vendor_device, known, type_, errors, multiple, None, containment
        )
    return event


def _header_item(header: _Header, names: _Names) -> _Item:
    """A header whose details were not printed."""
    return _item(
        header.time,
        header.reporter,
        header.source,
        None,
        header.severity,
        None,
        header.multiple,
        None,
        (),
        header.dpc is not None,
        names,
    )


def _block_item(block: _Block, header: _Header | None, names: _Names) -> _Item:
    severity = block.severity or (header.severity if header else None)
    if severity is None:
        severity = _severity_from_names(block)
    return _item(
        header.time if header else block.time,
        header.reporter if header else None,
        block.device if block.device else (header.source if header else None),
        block.vendor_device,
        severity,
        block.type or _layer(block.layer),
        header.multiple if header else False,
        (block.status, block.mask) if block.status is not None else None,
        block.bits,
        header is not None and header.dpc is not None,
        names,
    )


def _section_item(section: _Section, names: _Names) -> _Item:
    severity = section.severity or "corrected"
    type_ = _layer(section.layer)
    merged = section.merged
    bits: _Bits = ()
    if merged is not None:
        status = (merged.status, merged.mask) if merged.status is not None else None
        bits = merged.bits
        type_ = type_ or _layer(merged.layer)
    elif severity == "corrected":
        status = section.cor or section.status
    else:
        status = section.uncor or section.status
    return _item(
        section.time,
        None,
        section.device,
        section.vendor_device,
        severity,
        type_,
        False,
        status,
        bits,
        False,
        names,
    )


def _severity_from_names(block: _Block) -> str | None:
    names = {name for _, name in block.bits if name}
    if names & _CORRECTABLE_NAMES:
        return "corrected"
    if names & _UNCORRECTABLE_NAMES or block.uncorrectable_hint:
        return _UNCORRECTABLE
    return None


# A report's place in the log and its severity: the candidates `_Resolver` weighs.
_Mark = tuple[int, str]


class _Pending:
    """A draft waiting for the reports after it: the nearest known one before it (of every
    severity, and uncorrectable) when it came, and the first known one after it, once seen."""

    __slots__ = ("after_any", "after_uncorrectable", "before_any", "before_uncorrectable",
                 "draft", "index")  # fmt: skip

    def __init__(self, index: int, draft: _Draft, before: tuple[_Mark | None, _Mark | None]):
        self.index = index
        self.draft = draft
        self.before_any, self.before_uncorrectable = before
        self.after_any: _Mark | None = None
        self.after_uncorrectable: _Mark | None = None


class _Resolver:
    """Severity is never null: a draft takes it from the nearest report on the same device,
    in the log's order of events (the later one first at equal distance); drafts are settled
    in order, each seeing the severities of those settled before it, and only reports whose
    severity the log printed count after it. Events go to `sink` with their place as soon as
    they are settled; only the drafts of a device still waiting are held, with the last
    known report of each device (memory grows with the devices, not the events)."""

    def __init__(self, sink: Sink, run_sink: RunSink | None = None) -> None:
        self.sink = sink
        self.run_sink = run_sink  # where a run of reports may go at once (`push_run`)
        self.index = -1  # the place of the last event pushed
        self.known: dict[str, tuple[_Mark | None, _Mark | None]] = {}  # device -> last known
        self.settled: dict[str, tuple[_Mark | None, _Mark | None]] = {}  # last draft settled
        self.waiting: dict[str, list[_Pending]] = {}

    def push(self, item: _Item, time: str | None) -> None:
        """The next report: its event (shared, without its time) or draft, and its time."""
        self.index += 1
        index = self.index
        device = item.device
        if isinstance(item, AerEvent):
            self.sink(index, item, time)
            if device is None:
                return
            mark = self._know(device, index, item.severity)
            uncorrectable = mark[1] != "corrected"
            waiting = self.waiting.get(device)
            if waiting:
                for pending in waiting:
                    if pending.after_any is None:
                        pending.after_any = mark
                    if uncorrectable and pending.after_uncorrectable is None:
                        pending.after_uncorrectable = mark
        elif device is None:
            self._settle_as(index, item, None)
        else:
            pending = _Pending(index, item, self.known.get(device, (None, None)))
            self.waiting.setdefault(device, []).append(pending)
        if self.waiting:
            self._settle(final=False)

    def push_done(self, slots: list[_Done]) -> None:
        """`push` of each event of each slot in turn (the reports read at once: a storm's
        are a few sequences of lines over and over). With no draft waiting, the reports of
        each sequence go to the run sink at once, and each device's last known report is the
        one pushing them one by one leaves."""
        if self.run_sink is None or self.waiting or len(slots) < 2:
            for slot in slots:
                for event in slot.events:
                    self.push(event, slot.time)
            return
        runs: dict[int, tuple[tuple[AerEvent, ...], list[int], list[str | None]]] = {}
        index = self.index
        for slot in slots:
            events = slot.events
            run = runs.get(id(events))
            if run is None:
                run = runs[id(events)] = (events, [], [])
            run[1].append(index + 1)
            run[2].append(slot.time)
            index += len(events)
        self.index = index
        # each run's last report, known in the order of the places: what the whole runs leave
        latest: list[tuple[int, AerEvent]] = []
        for events, places, times in runs.values():
            self.run_sink(places, events, times)
            latest.extend((places[-1] + offset, event) for offset, event in enumerate(events))
        for place, event in sorted(latest, key=lambda pair: pair[0]):
            if event.device is not None:
                self._know(event.device, place, event.severity)

    def _know(self, device: str, index: int, severity: str) -> _Mark:
        """The device's last known report is now the one at `index` (and its last
        uncorrectable one too, where it is); its mark."""
        mark = (index, severity)
        _, last_uncorrectable = self.known.get(device, (None, None))
        self.known[device] = (mark, last_uncorrectable if severity == "corrected" else mark)
        return mark

    def finish(self) -> None:
        self._settle(final=True)

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

    def _severity(self, device: str, pending: _Pending, final: bool) -> str | None:
        """The draft's severity, or None while the reports after it may still decide it."""
        uncorrectable = pending.draft.severity == _UNCORRECTABLE
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
        if before is not None and (final or self.index >= 2 * index - before[0]):
            return before[1]
        if final:
            return "nonfatal" if uncorrectable else "corrected"
        return None

    def _settle_as(self, index: int, draft: _Draft, severity: str | None) -> None:
        if severity is None:  # no device: nothing near to take it from
            severity = "nonfatal" if draft.severity == _UNCORRECTABLE else "corrected"
        draft.severity = severity
        if draft.device is not None:
            mark = (index, severity)
            _, last_uncorrectable = self.settled.get(draft.device, (None, None))
            self.settled[draft.device] = (
                mark,
                mark if severity != "corrected" else last_uncorrectable,
            )
        self.sink(index, draft.event(), draft.time)


def _later(one: _Mark | None, other: _Mark | None) -> _Mark | None:
    if one is None:
        return other
    if other is None:
        return one
    return one if one[0] > other[0] else other


def _final_severity(value: str | None) -> Severity:
    if value == "fatal":
        return "fatal"
    if value in ("nonfatal", _UNCORRECTABLE):
        return "nonfatal"
    return "corrected"


def _errors(severity: Severity, status: tuple[int, int] | None, bits: _Bits) -> tuple[str, ...]:
    """Bit names: decoded from status & ~mask when printed, then the bit lines as printed."""
    table = CORRECTABLE_BITS if severity == "corrected" else UNCORRECTABLE_BITS
    names: list[str] = []
    if status is not None:
        unmasked = status[0] & ~status[1]
        while unmasked:  # each set bit, lowest first
            lowest = unmasked & -unmasked
            unmasked ^= lowest
            name = table.get(lowest.bit_length() - 1)
            if name is not None and name not in names:
                names.append(name)
    for bit, printed in bits:
        name = printed if printed is not None else table.get(bit)
        if name is not None and name not in names:
            names.append(name)
    return tuple(names)


# ---------------------------------------------------------------------------------------------
# small helpers


def _normalise_bdf(text: str) -> str:
    """`dddd:bb:dd.f`, lower case, 4-digit domain added or padded (5-digit VMD kept)."""
    text = text.lower()
    domain, sep, rest = text.partition(":")
    if rest.count(":") == 0:  # "bb:dd.f" with no domain
        return "0000:" + text
    return domain.zfill(4) + sep + rest


def _bdf_id(bdf: str) -> int:
    """The 16-bit requester id (bus << 8 | devfn) of a bus id."""
    bus, slot_fn = bdf.split(":")[-2:]
    slot, _, fn = slot_fn.partition(".")
    return int(bus, 16) << 8 | int(slot, 16) << 3 | int(fn)


def _severity_word(text: str) -> str | None:
    lowered = text.lower()
    if "non-fatal" in lowered:
        return "nonfatal"
    if "fatal" in lowered:
        return "fatal"
    if "correct" in lowered:
        return "corrected"
    return None


def _cper_severity(text: str) -> str:
    """CPER severities as the kernel maps them (cper_severity_to_aer)."""
    word = text.strip().lower()
    if word.startswith("recoverable"):
        return "nonfatal"
    if word.startswith("fatal"):
        return "fatal"
    return "corrected"


def _domain(bdf: str | None) -> str | None:
    """The PCI domain of a bus id ("0000" of "0000:98:00.0")."""
    return bdf.partition(":")[0] if bdf is not None else None


def _layer(text: str | None) -> str | None:
    return text if text in _LAYERS else None


def _bit_name(printed: str) -> str | None:
    """The current short name of a printed bit line's name; None for "Unknown Error Bit" (the
    caller then names the bit by its index). Words after the name (a "(First)" mark, or the
    layer/agent some kernels add) are ignored."""
    words = [word for word in printed.split() if word != "(First)"]
    for count in range(min(len(words), 4), 0, -1):
        name = " ".join(words[:count])
        if name in _KNOWN_NAMES:
            return name
        long_name = _LONG_NAMES.get(name)
        if long_name is not None:
            return long_name
    return None
