"""Pure parser for NVIDIA Xid / NVSwitch SXid reports and "fallen off the bus" messages.

Reads `KernelLine`s (see `sitscheck.kernlog.lines`) as a stream. One `XidEvent` per:

- ``NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.`` in
  every shape the driver has printed: old ``(0003:00)`` / ``(0000:03:00)`` addresses, MIG
  ``(PCI:0000:3b:00 GPU-I:01 GPU-CI:02)`` attribution, no pid/name fields, ``pid=1300,`` alone,
  ``pid='<unknown>', name=<unknown>``, ``name=(udev-worker)``;
- ``nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 ...``: one event per
  report. The "Severity N Engine instance ..." and "Data {...}" lines the driver prints after
  it, with the same switch and SXid, are its details (switches interleave: joined by switch
  and number); a detail whose report is not in the log is one event, later details join it;
- a "fallen off the bus" message without an Xid number, single-line (``NVRM: GPU
  0000:91:00.0: GPU has fallen off the bus.``, ``NVRM: GPU at 0000:01:00.0 has fallen off the
  bus.``) or the three-line ``NVRM: The NVIDIA GPU 0000:b3:00.0`` / ``(PCI ID: ...)`` /
  ``fallen off the bus ...`` form. Printed next to an Xid 79 for the same GPU it is the same
  event, counted once.

Continuation lines (GSP RPC history tables, RISC-V register dumps, other indented NVRM lines)
are kept with the event above them (`XidEvent.details`, bounded). The facts are those of the
project's facts document (section "xid"); `XidEvent.to_fact()` gives them plus `time` and
`message`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from sitscheck.kernlog.anchor import Anchor
from sitscheck.kernlog.lines import KernelLine

from .check import KERNEL_LOG
from .events import XidEvent
from .tally import XidTally

__all__ = ["XID_ANCHORS", "XidEvent", "XidLines", "might_be_xid", "parse_xid"]

_ADDR = r"[0-9a-fA-F]{1,8}(?::[0-9a-fA-F]{1,4}){1,2}(?:\.[0-7])?"
_TAIL = r")(?P<attr>[^)]*)\):\s*(?P<code>\d+)(?:,\s?(?P<rest>.*))?"
_XID = re.compile(r"\bXid \((?:PCI:)?(?P<addr>" + _ADDR + _TAIL)
_SXID = re.compile(r"\bSXid \((?:PCI:)?(?P<addr>" + _ADDR + _TAIL)
_MIG = re.compile(r"GPU-(?P<kind>C?I):\s*(?P<id>\d+)")
_BDF = re.compile(r"(?:PCI:)?(?P<addr>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)")
# "NVRM: GPU 18:00.0: GPU has fallen off the bus." (no PCI domain: domain 0)
_BDF_NO_DOMAIN = re.compile(
    r"\bGPU (?:at )?(?:PCI:)?(?P<addr>[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b"
)
# the detail lines of an NVSwitch SXid report, after "SXid (PCI:...): N, "
_SXID_DETAIL = ("Severity ", "Data {", "Data{")
_FALLEN = "fallen off the bus"
_FALL_START = "The NVIDIA GPU "
_FALL_LINES = 4  # the multi-line message is three lines; allow one stray NVRM line
# NVRM lines that begin a new context rather than continue a dump
_CONTEXT = ("GPU at PCI:", "GPU Board Serial Number", "loading NVIDIA", "The NVIDIA ")
_MAX_DETAILS = 64
_UNKNOWN = ("<unknown>", "'<unknown>'", "", "N/A", "'N/A'")

# For `candidates.candidate_lines`: Xid and SXid lines, and every NVRM line (fallen-off messages,
# the lines of the three-line one, GSP dumps).
XID_ANCHORS: tuple[Anchor, ...] = KERNEL_LOG.anchors  # as the check declares them


def might_be_xid(raw_line: str) -> bool:
    """Cheap substring test: False only for lines `parse_xid` never needs (raw or body)."""
    return "Xid" in raw_line or "NVRM" in raw_line or _FALLEN in raw_line


def parse_xid(lines: Iterable[KernelLine]) -> list[XidEvent]:
    """Every Xid/SXid/fallen-off-the-bus event in `lines`, in order (with all their details)."""
    state = _XidState(None)
    for line in lines:
        body = line.body
        if "Xid" in body or "NVRM" in body or _FALLEN in body:  # `might_be_xid`, inlined
            state.feed(body, line.time)
    return [draft.event() for draft in state.drafts]


Sink = Callable[[int, XidEvent], None]  # an event and its place in the log


class XidLines:
    """The xid check's line handler in the one kernel-log pass (`KernelLogInterest`).

    Each event is handed to `sink` (by default an `XidTally`, what `finish` returns) with its
    place in the log once no later line can change its facts: when the next event of its
    device begins (a fallen-off message pairs only with the last event of its device), or at
    the end. Its `details` are those read by then (no fact nor judge reads them)."""

    def __init__(self, sink: Sink | None = None) -> None:
        self.tally: XidTally | None = None
        if sink is None:
            self.tally = XidTally()
            sink = self.tally.add
        self._state = _XidState(sink)

    def feed(self, body: str, time: str | None) -> None:
        """A line's message and time (`KernelLine.body`, `.time`)."""
        if "Xid" in body or "NVRM" in body or _FALLEN in body:  # `might_be_xid`, inlined
            self._state.feed(body, time)

    def finish(self) -> XidTally | None:
        """The tally (None when the events went to a sink of the caller's)."""
        self._state.finish()
        return self.tally


class _Draft:
    __slots__ = (
        "compute_instance",
        "details",
        "device",
        "falls",
        "gpu_instance",
        "index",
        "message",
        "paired",
        "pid",
        "process",
        "sxid",
        "time",
        "xid",
    )

    def __init__(self, device: str | None, time: str | None, message: str) -> None:
        self.device = device
        self.time = time
        self.message = message
        self.xid: int | None = None
        self.sxid: int | None = None
        self.pid: int | None = None
        self.process: str | None = None
        self.gpu_instance: int | None = None
        self.compute_instance: int | None = None
        self.details: list[str] = []
        self.falls = False  # an Xid 79 or a fallen-off-the-bus message
        self.paired = False  # already counted together with its Xid 79 / message
        self.index = 0  # its place among the log's events

    def event(self) -> XidEvent:
        return XidEvent(
            device=self.device,
            xid=self.xid,
            sxid=self.sxid,
            pid=self.pid,
            process=self.process,
            message=self.message,
            time=self.time,
            gpu_instance=self.gpu_instance,
            compute_instance=self.compute_instance,
            details=tuple(self.details),
        )


class _PendingFall:
    """The first line(s) of the multi-line "The NVIDIA GPU ... fallen off the bus" message."""

    __slots__ = ("device", "left", "parts", "time")

    def __init__(self, device: str | None, time: str | None, text: str) -> None:
        self.device = device
        self.time = time
        self.parts = [text]
        self.left = _FALL_LINES - 1


class _XidState:
    """The stream's state; with a `sink`, each event is handed on as soon as it is done (see
    `XidLines`), else every draft is kept (`drafts`, for `parse_xid`)."""

    def __init__(self, sink: Sink | None) -> None:
        self.sink = sink
        self.count = 0
        self.drafts: list[_Draft] = []
        self.last_by_device: dict[str | None, _Draft] = {}
        # the open SXid report of each (switch, SXid): its detail lines join it
        self.sxid_reports: dict[tuple[str, int], _Draft] = {}
        self.pending: _PendingFall | None = None
        self.attach: _Draft | None = None

    def feed(self, body: str, time: str | None) -> None:
        """One line `might_be_xid` keeps (`parse_xid` feeds no other)."""
        if "Xid (" in body:
            if self._sxid(body, time) or self._xid(body, time):
                return
        nvrm = _nvrm_text(body)
        if self.pending is not None and self._continue_fall(self.pending, body, nvrm):
            return
        if _FALLEN in body:
            self._fallen(time, _bdf_in(body), nvrm if nvrm is not None else body.strip())
            return
        if nvrm is not None and nvrm.startswith(_FALL_START):
            self.pending = _PendingFall(_bdf_in(nvrm), time, nvrm)
            self.attach = None
            return
        self._continuation(nvrm)

    def finish(self) -> None:
        """Hand on the events still open (the last of each device), in log order."""
        if self.sink is not None:
            for draft in sorted(self.last_by_device.values(), key=lambda d: d.index):
                self.sink(draft.index, draft.event())
            self.last_by_device.clear()

    def _xid(self, body: str, time: str | None) -> bool:
        match = _XID.search(body)
        if match is None:
            return False
        draft = _Draft(_device(match.group("addr")), time, "")
        draft.xid = int(match.group("code"))
        _mig(draft, match.group("attr"))
        draft.pid, draft.process, draft.message = _pid_name_message(match.group("rest") or "")
        draft.falls = draft.xid == 79
        earlier = self.last_by_device.get(draft.device)
        if draft.falls and earlier is not None and _pairs(earlier, draft):
            _merge_into_message_event(earlier, draft)
            self.attach = earlier
            return True
        self._add(draft)
        return True

    def _sxid(self, body: str, time: str | None) -> bool:
        match = _SXID.search(body)
        if match is None:
            return False
        device = _device(match.group("addr"))
        code = int(match.group("code"))
        rest = (match.group("rest") or "").strip()
        key = (device, code)
        if rest.startswith(_SXID_DETAIL):
            report = self.sxid_reports.get(key)
            if report is not None:
                if len(report.details) < _MAX_DETAILS:
                    report.details.append(rest)
                self.attach = report
                return True
        draft = _Draft(device, time, rest)
        draft.sxid = code
        self._add(draft)
        self.sxid_reports[key] = draft
        return True

    def _fallen(self, time: str | None, device: str | None, message: str) -> None:
        """A fallen-off-the-bus message with no Xid number of its own."""
        draft = _Draft(device, time, message)
        draft.falls = True
        earlier = self.last_by_device.get(device)
        if earlier is not None and _pairs(earlier, draft):
            earlier.paired = True  # the Xid 79 above already is this event
            self.attach = earlier
            return
        self._add(draft)

    def _continue_fall(self, pending: _PendingFall, body: str, nvrm: str | None) -> bool:
        """The next line of a pending three-line message; False when it is not one."""
        if nvrm is None or "Xid (" in body:
            self.pending = None
            return False
        pending.parts.append(nvrm)
        pending.left -= 1
        if _FALLEN in nvrm:
            self.pending = None
            self._fallen(pending.time, pending.device, " ".join(pending.parts))
        elif pending.left <= 0:
            self.pending = None
        return True

    def _continuation(self, nvrm: str | None) -> None:
        target = self.attach
        if target is None:
            return
        if nvrm is not None and nvrm.startswith(_CONTEXT):
            self.attach = None
            return
        if nvrm is not None and len(target.details) < _MAX_DETAILS:
            target.details.append(nvrm)

    def _add(self, draft: _Draft) -> None:
        draft.index = self.count
        self.count += 1
        if self.sink is None:
            self.drafts.append(draft)
        else:
            done = self.last_by_device.get(draft.device)
            if done is not None:  # no later line changes it: the next one of its device began
                self.sink(done.index, done.event())
        self.last_by_device[draft.device] = draft
        self.attach = draft
        self.pending = None


def _pairs(earlier: _Draft, later: _Draft) -> bool:
    """An Xid 79 and a no-Xid fallen-off message for one GPU, neither yet paired."""
    if not (earlier.falls and later.falls) or earlier.paired:
        return False
    return (earlier.xid is None) != (later.xid is None)


def _merge_into_message_event(message_event: _Draft, xid79: _Draft) -> None:
    """The Xid 79 line printed after its fallen-off message: one event, the Xid's fields."""
    message_event.xid = xid79.xid
    message_event.pid = xid79.pid
    message_event.process = xid79.process
    message_event.gpu_instance = xid79.gpu_instance
    message_event.compute_instance = xid79.compute_instance
    message_event.message = xid79.message
    message_event.paired = True


def _nvrm_text(body: str) -> str | None:
    """The text after "NVRM: " (None when the line is not an NVRM line)."""
    stripped = body.lstrip()
    if not stripped.startswith("NVRM:"):
        return None
    return stripped[5:].strip()


def _device(addr: str) -> str:
    """`dddd:bb:dd.f` from the driver's "0000:3b:00", old "0003:00", or "0000:04:00.0"."""
    main, _, function = addr.partition(".")
    parts = main.split(":")
    if len(parts) == 2:  # old drivers: bus:device
        domain, bus, slot = 0, int(parts[0], 16), int(parts[1], 16)
    else:
        domain, bus, slot = int(parts[0], 16), int(parts[1], 16), int(parts[2], 16)
    return f"{domain:04x}:{bus:02x}:{slot:02x}.{function or '0'}"


def _bdf_in(text: str) -> str | None:
    match = _BDF.search(text) or _BDF_NO_DOMAIN.search(text)
    return _device(match.group("addr")) if match else None


def _mig(draft: _Draft, attr: str) -> None:
    for match in _MIG.finditer(attr):
        if match.group("kind") == "I":
            draft.gpu_instance = int(match.group("id"))
        else:
            draft.compute_instance = int(match.group("id"))


def _pid_name_message(rest: str) -> tuple[int | None, str | None, str]:
    """Split "pid=N, name=comm, message" (either field may be absent)."""
    pid: int | None = None
    process: str | None = None
    if rest.startswith("pid="):
        value, rest = _field(rest[4:])
        pid = int(value) if value.isdecimal() else None
    if rest.startswith("name="):
        value, rest = _field(rest[5:])
        process = None if value in _UNKNOWN else value
    return pid, process, rest.strip()


def _field(text: str) -> tuple[str, str]:
    """The value up to the next ", " and what follows it."""
    value, sep, rest = text.partition(", ")
    if not sep:
        value, rest = text.rstrip(","), ""
    return value.strip(), rest
