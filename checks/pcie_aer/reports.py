"""The report assembly: which report each message (`wordings.Said`) belongs to.

The rules are those of the facts document (section "aer"): a header line ("... error
received", a DPC containment) opens a report of its port; the detail lines after it (severity
and type, status word, bit lines) make one block per device, matched to their report by the
device prefix every one of them carries, so other messages printed in between change nothing.
A block joins the newest open report of the same severity class (corrected / uncorrectable)
and PCI domain that has no block of its device yet; a block with no such report is a report of
its own. A new header closes every open block, and the report of its own port before it.
Firmware-first CPER records make a report per PCIe section, which the kernel's own print of it
(``aer_status``, bit lines, ``aer_layer``) joins, the device's sections in the order they came.

Reports are kept in the order of their first line (`slots`) and handed on as `Draft`s to the
resolver, in that order, as soon as no later line can change them (`flush`), so an error storm
is read in bounded memory: a report held open while `MAX_HELD` later ones are done is closed,
and a line that would still have joined it then starts a report of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import wordings as w
from .events import Bits
from .resolve import Draft, Resolver

MAX_OPEN_HEADERS = 16  # reports of different ports open at once, at most
MAX_OPEN_RECORDS = 16  # firmware-first records (and one device's sections waiting), at most
FLUSH_EVERY = 64  # new reports between two looks for the ones done (`Reports.flush`)
MAX_HELD = 4096  # reports held behind the oldest one still open, at most


class _Header:
    """A report begun by a header line: the port that logged it, and its detail blocks."""

    __slots__ = ("blocks", "containment", "domain", "multiple", "named", "reporter", "severity",
                 "source", "source_id", "time")  # fmt: skip

    def __init__(self, reporter: str | None, domain: str | None, time: str | None) -> None:
        self.reporter = reporter
        self.domain = domain  # the reporter's PCI domain
        self.time = time
        self.severity: str | None = None
        self.multiple = False
        self.source: str | None = None
        self.source_id: int | None = None
        self.blocks: list[_Block] = []
        self.containment = False  # a DPC containment report
        self.named = False  # of a containment: whether a line named its trigger


class _Block:
    """The detail lines printed for one device: severity/type, status/mask, bits."""

    __slots__ = ("bits", "bus_line", "device", "layer", "mask", "severity", "status", "time",
                 "type", "uncorrectable_hint", "vendor_device")  # fmt: skip

    def __init__(self, device: str | None, time: str | None) -> None:
        self.device = device
        self.time = time
        self.bus_line = False
        self.severity: str | None = None
        self.type: str | None = None
        self.layer: str | None = None  # "aer_layer=" as printed
        self.vendor_device: str | None = None
        self.status: int | None = None
        self.mask = 0
        self.bits: Bits = ()
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
    """One "section_type: PCIe error" section of a CPER record: a report."""

    __slots__ = ("cor", "device", "layer", "merged", "record", "severity", "status", "time",
                 "uncor", "vendor_device")  # fmt: skip

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
        self.merged: _Block | None = None  # the kernel's print of it


_Slot = _Header | _Block | _Section


class Reports:
    """The reports of a stream of messages: `apply` each, in order, then `finish`."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self.slots: list[_Slot] = []  # reports not yet handed on, in order of their first line
        self.flush_at = FLUSH_EVERY
        self.open_blocks: dict[str | None, _Block] = {}
        self.open_headers: dict[str | None, _Header] = {}  # by reporter, oldest first
        self.records: dict[str, _Record] = {}
        # per device, its CPER sections the kernel has not printed yet, oldest first (the kernel
        # prints them in the order the firmware reported them: aer_recover_queue is a FIFO)
        self.sections_by_device: dict[str, list[_Section]] = {}
        self._apply: dict[type[w.Said], Callable[[Any, str | None], None]] = {
            w.Header: self._header,
            w.Containment: self._containment,
            w.Trigger: self._trigger,
            w.NoDetails: self._no_details,
            w.BusError: self._bus_error,
            w.Status: self._status,
            w.Bit: self._bit,
            w.GhesStatus: self._ghes_status,
            w.GhesLayer: self._ghes_layer,
            w.GhesSeverity: self._ghes_severity,
            w.Cper: self._cper,
        }

    def apply(self, said: w.Said, time: str | None) -> None:
        """One message of the log, and its time."""
        self._apply[type(said)](said, time)
        if len(self.slots) >= self.flush_at:
            self.flush()

    def finish(self) -> None:
        """The end of the log: every report is done."""
        self.flush(final=True)
        self.resolver.finish()

    # -- a new report ----------------------------------------------------------------------------

    def _header(self, said: w.Header, time: str | None) -> None:
        header = _Header(said.reporter, said.domain, time)
        header.severity = said.severity
        header.multiple = said.multiple
        header.source = said.source
        header.source_id = said.source_id
        self._open(header)

    def _containment(self, said: w.Containment, time: str | None) -> None:
        header = _Header(said.port, said.domain, time)
        header.severity = said.severity
        header.source = said.source
        header.containment = True
        header.named = said.named
        self._open(header)

    def _trigger(self, said: w.Trigger, time: str | None) -> None:
        """The trigger of the port's containment report just printed; one whose report line
        was cut off stands for it."""
        header = self.open_headers.get(said.port)
        if header is not None and header.containment and not header.named:
            header.severity = said.severity
            header.named = True
            return
        orphan = _Header(said.port, said.domain, time)
        orphan.severity = said.severity
        orphan.containment = orphan.named = True
        self._open(orphan)

    def _no_details(self, said: w.NoDetails, time: str | None) -> None:
        header = self.open_headers.get(said.reporter)
        if header is not None and not header.blocks:
            if header.source_id is None or header.source_id == said.source_id:
                return  # the header's own "no details" note: part of its report
        # its header was cut off: the note stands for it
        orphan = _Header(said.reporter, said.domain, time)
        orphan.source = said.source
        orphan.source_id = said.source_id
        self.slots.append(orphan)

    def _open(self, header: _Header) -> None:
        """A new report: the detail lines after it start its blocks."""
        self._make_room(header.reporter)
        self.open_headers[header.reporter] = header
        self.slots.append(header)

    def _make_room(self, reporter: str | None) -> None:
        """What a new report's header does to the others: every open block is done, so is the
        report of its port before it, and the oldest open header where all are taken."""
        self.open_blocks.clear()
        headers = self.open_headers
        headers.pop(reporter, None)
        if len(headers) >= MAX_OPEN_HEADERS:
            del headers[next(iter(headers))]

    # -- a device's detail block -----------------------------------------------------------------

    def _bus_error(self, said: w.BusError, time: str | None) -> None:
        block = self.open_blocks.get(said.device)
        if block is None or block.has_details():
            block = self._start_block(said, time, said.severity)
        block.bus_line = True
        block.severity = said.severity
        if said.has_type:
            block.type = said.type

    def _status(self, said: w.Status, time: str | None) -> None:
        block = self.open_blocks.get(said.device)
        if block is None or block.status is not None or block.bits:
            block = self._start_block(said, time, None)
        block.vendor_device = said.vendor_device
        block.status = said.status
        block.mask = said.mask

    def _bit(self, said: w.Bit, time: str | None) -> None:
        block = self.open_blocks.get(said.device)
        if block is None or (block.bits and said.bit[0] <= block.bits[-1][0]):
            block = self._start_block(said, time, None)
        block.bits += (said.bit,)

    def _start_block(
        self, said: w.BusError | w.Status | w.Bit, time: str | None, severity: str | None
    ) -> _Block:
        block = _Block(said.device, time)
        header = self._header_for(said.device, said.domain, severity)
        if header is not None:
            header.blocks.append(block)
        else:
            self.slots.append(block)
        self.open_blocks[said.device] = block
        return block

    def _header_for(
        self, device: str | None, domain: str | None, severity: str | None
    ) -> _Header | None:
        """The newest open header a new block of `device` belongs to: not of the other
        severity class (corrected / uncorrectable), not logged in another PCI domain, and with
        no block of the device yet."""
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

    # -- firmware first --------------------------------------------------------------------------

    def _ghes_status(self, said: w.GhesStatus, time: str | None) -> None:
        """The kernel's print of a firmware-first report: joins the device's oldest section
        not yet printed, else a report of its own."""
        block = _Block(said.device, time)
        block.bus_line = True
        block.status = said.status
        block.mask = said.mask
        waiting = self.sections_by_device.get(said.device) if said.device else None
        if waiting:
            waiting.pop(0).merged = block
        else:
            self.slots.append(block)
        self.open_blocks[said.device] = block

    def _ghes_layer(self, said: w.GhesLayer, time: str | None) -> None:
        block = self.open_blocks.get(said.device)
        if block is not None:
            block.layer = said.layer

    def _ghes_severity(self, said: w.GhesSeverity, time: str | None) -> None:
        block = self.open_blocks.get(said.device)
        if block is not None:
            block.uncorrectable_hint = True

    def _cper(self, said: w.Cper, time: str | None) -> None:
        records = self.records
        record = records.get(said.record)
        if record is None or said.starts:
            record = _Record(time)
            records.pop(said.record, None)
            records[said.record] = record
            if len(records) > MAX_OPEN_RECORDS:  # {N} grows with every record
                del records[next(iter(records))]
        if said.event_severity is not None:
            record.event_severity = said.event_severity
        elif said.section_severity is not None:
            record.section_severity = said.section_severity
            record.current = None
        elif said.section is not None:
            record.current = None
            if said.section:
                record.current = _Section(record)
                self.slots.append(record.current)
        elif record.current is not None:
            self._cper_section_field(record.current, said)

    def _cper_section_field(self, section: _Section, said: w.Cper) -> None:
        if said.device is not None:
            section.device = said.device
            waiting = self.sections_by_device.setdefault(said.device, [])
            waiting.append(section)
            if len(waiting) > MAX_OPEN_RECORDS:
                del waiting[0]
        elif said.vendor_device is not None:
            section.vendor_device = said.vendor_device
        if said.aer is not None:
            which, pair = said.aer
            if which == "cor_":
                section.cor = pair
            elif which == "uncor_":
                section.uncor = pair
            else:
                section.status = pair
        if said.layer is not None:
            section.layer = said.layer

    # -- handing on --------------------------------------------------------------------------------

    def flush(self, final: bool = False) -> None:
        """Hand on the reports no later line can change, from the oldest (all of them when
        `final`). A report held open while `MAX_HELD` later ones are done is closed."""
        slots = self.slots
        done = len(slots) if final else self._done()
        while done == 0 and len(slots) > MAX_HELD:
            self._close(slots[0])
            done = self._done()
        push = self.resolver.push
        for slot in slots[:done]:
            for draft in _drafts(slot):
                push(draft)
        del slots[:done]
        self.flush_at = len(slots) + FLUSH_EVERY

    def _done(self) -> int:
        """How many reports, from the oldest, no later line can change."""
        live = self._live()
        done = 0
        for slot in self.slots:
            if _is_live(slot, live):
                break
            done += 1
        return done

    def _live(self) -> set[int]:
        """The ids of the reports and blocks a later line may still change."""
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
        for block in slot.blocks:  # (a loop, not a generator: once a report, in a storm)
            if id(block) in live:
                return True
        return False
    if isinstance(slot, _Section):
        return slot.merged is not None and id(slot.merged) in live
    return False


# -- a finished report's drafts: one per block of a header (the header alone without one)


def _drafts(slot: _Slot) -> list[Draft]:
    if isinstance(slot, _Header):
        return [_block_draft(block, slot) for block in slot.blocks] or [_header_draft(slot)]
    if isinstance(slot, _Block):
        return [_block_draft(slot, None)]
    return [_section_draft(slot)]


def _header_draft(header: _Header) -> Draft:
    """A header whose details were not printed."""
    return Draft(
        header.time,
        header.reporter,
        header.source,
        None,
        header.severity,
        None,
        header.multiple,
        None,
        (),
        header.containment,
    )


def _block_draft(block: _Block, header: _Header | None) -> Draft:
    severity = block.severity or (header.severity if header else None)
    if severity is None:
        severity = _severity_from_names(block)
    return Draft(
        header.time if header else block.time,
        header.reporter if header else None,
        block.device if block.device else (header.source if header else None),
        block.vendor_device,
        severity,
        block.type or w.layer_type(block.layer),
        header.multiple if header else False,
        (block.status, block.mask) if block.status is not None else None,
        block.bits,
        header is not None and header.containment,
    )


def _section_draft(section: _Section) -> Draft:
    severity = section.severity or "corrected"
    type_ = w.layer_type(section.layer)
    merged = section.merged
    bits: Bits = ()
    if merged is not None:
        status = (merged.status, merged.mask) if merged.status is not None else None
        bits = merged.bits
        type_ = type_ or w.layer_type(merged.layer)
    elif severity == "corrected":
        status = section.cor or section.status
    else:
        status = section.uncor or section.status
    return Draft(
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
    )


def _severity_from_names(block: _Block) -> str | None:
    names = {name for _, name in block.bits if name}
    if names & w.CORRECTABLE_NAMES:
        return "corrected"
    if names & w.UNCORRECTABLE_NAMES or block.uncorrectable_hint:
        return w.UNCORRECTABLE
    return None
