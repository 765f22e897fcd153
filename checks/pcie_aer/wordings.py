"""What one kernel-log message says of an AER report, in every wording the kernel has used.

`read_message(body)` turns a message (a `KernelLine.body`) into one small record (`Said`), or
None for a message that is no part of an AER report. The wordings:

- 2.6.32 .. 4.18: ``AER: Corrected error received: id=00e8`` headers, ``PCIe Bus Error:
  severity=Corrected, type=Physical Layer, id=00e8(Receiver ID)``, long bit names
  (``Receiver Error``, ``Replay Timer Timeout``, ...);
- 4.19 .. 6.7: ``AER: Corrected error received: 0000:00:1c.5`` and short bit names;
- 6.8+: ``AER: Correctable error message received from 0000:00:00.0`` (``(no details found``);
- firmware-first (APEI/GHES) ``{1}[Hardware Error]: ... section_type: PCIe error`` blocks and
  the ``aer_status: 0x.., aer_mask: 0x..`` / ``aer_layer=.., aer_agent=..`` lines the kernel
  prints for them;
- Downstream Port Containment (drivers/pci/pcie/dpc.c): ``DPC: containment event,
  status:0x1f01 source:0x0000`` with its ``DPC: ERR_FATAL detected`` companion (4.19 .. 6.15;
  before 4.19 ``DPC containment event`` printed by the ``dpc 0000:00:03.2:pcie008`` service
  device), and 6.16+'s one-line ``status:0x000d, ERR_FATAL received from 0000:02:00.0`` /
  ``status:0x0009: unmasked uncorrectable error detected``;
- copies with runs of whitespace collapsed, ``AER:`` before every detail line or not, 5-digit
  VMD domains.

The records are immutable: a storm's messages recur verbatim, and each is read once (the
memo of `parse.AerLines`). How they make reports is `reports.py`'s business.
"""

from __future__ import annotations

import re

from msgspec import Struct

from .check import KERNEL_LOG
from .events import CORRECTABLE_BITS, UNCORRECTABLE_BITS

UNCORRECTABLE = "uncorrectable"  # a provisional severity: uncorrectable, fatality unknown

# the names kernels before 4.19 printed, and what they are called now
LONG_NAMES: dict[str, str] = {
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
CORRECTABLE_NAMES = frozenset(CORRECTABLE_BITS.values())
UNCORRECTABLE_NAMES = frozenset(UNCORRECTABLE_BITS.values())
_KNOWN_NAMES = CORRECTABLE_NAMES | UNCORRECTABLE_NAMES
_LAYERS = frozenset({"Physical Layer", "Data Link Layer", "Transaction Layer"})

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
_CPER_VENDOR = re.compile(
    r"vendor_id:\s*0x(?P<vendor>[0-9a-fA-F]{1,4}),\s*device_id:\s*0x(?P<device>[0-9a-fA-F]{1,4})"
)
# DPC: "containment event, status:0x1f01 source:0x0000" (4.19 .. 6.15, "DPC containment event,
# ..." before), 6.16+ "containment event, status:0x000d, ERR_FATAL received from 0000:02:00.0"
# / "containment event, status:0x0009: unmasked uncorrectable error detected"; the companion
# "ERR_FATAL detected" ("..., remove downstream devices" before 4.19).
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
# the severity a DPC trigger reason gives a report with no detail block (facts: "unmasked
# uncorrectable error" leaves it to the rest of the log, else non-fatal)
_DPC_SEVERITY: dict[str, str] = {
    "ERR_FATAL": "fatal",
    "ERR_NONFATAL": "nonfatal",
    "unmasked uncorrectable error": UNCORRECTABLE,
}
# DPC Status register, Trigger Reason (bits 2:1): 0 unmasked uncorrectable error, 1
# ERR_NONFATAL, 2 ERR_FATAL, 3 an extension (RP PIO error, software trigger)
_DPC_STATUS_REASON = ("unmasked uncorrectable error", "ERR_NONFATAL", "ERR_FATAL", "extension")


# -- what a message says -----------------------------------------------------------------------


class Header(Struct, frozen=True):
    """ "... error received": a new report logged by `reporter`, with no detail block yet."""

    reporter: str | None
    domain: str | None  # the reporter's PCI domain
    severity: str | None
    multiple: bool
    source: str | None  # "received: B" / "received from B"
    source_id: int | None  # its requester id, or "id=00e8"'s


class Containment(Struct, frozen=True):
    """ "DPC: containment event, ...": a report of the port that contained the link; a raw
    source id is like the header's id= (no device), "received from B" names it."""

    port: str | None
    domain: str | None
    severity: str
    named: bool  # whether the line names its trigger (else its companion line will)
    source: str | None


class Trigger(Struct, frozen=True):
    """ "DPC: ERR_FATAL detected": names the trigger of the port's containment report."""

    port: str | None
    domain: str | None
    severity: str


class NoDetails(Struct, frozen=True):
    """ "can't find device of ID00e5" / "found no error details for 0000:00:1c.5"."""

    reporter: str | None
    domain: str | None
    source: str | None
    source_id: int | None


class BusError(Struct, frozen=True):
    """ "PCIe Bus Error: severity=Correctable, type=Physical Layer, ...": a device's block."""

    device: str | None
    domain: str | None
    severity: str | None
    has_type: bool  # "type=" printed (`type` is None where it names no layer)
    type: str | None


class Status(Struct, frozen=True):
    """ "device [10de:2335] error status/mask=00000001/0000e000"."""

    device: str | None
    domain: str | None
    vendor_device: str
    status: int
    mask: int


class Bit(Struct, frozen=True):
    """ "[ 0] RxErr  (First)": one bit of the status word, by index and (current) name."""

    device: str | None
    domain: str | None
    bit: tuple[int, str | None]


class GhesStatus(Struct, frozen=True):
    """ "aer_status: 0x.., aer_mask: 0x..": the kernel's print of a firmware-first report."""

    device: str | None
    status: int
    mask: int


class GhesLayer(Struct, frozen=True):
    """ "aer_layer=Transaction Layer, aer_agent=Receiver ID"."""

    device: str | None
    layer: str  # as printed (`layer_type` tells a layer of the three)


class GhesSeverity(Struct, frozen=True):
    """ "aer_uncor_severity: 0x...": the block is of an uncorrectable error."""

    device: str | None


class Cper(Struct, frozen=True):
    """One "{N}[Hardware Error]: ..." line of a firmware-first record: at most one of the
    fields after `starts` is set, the one the line gives."""

    record: str  # N ("" where not printed)
    starts: bool  # "Hardware error from ...": a new record
    event_severity: str | None = None  # "event severity: ..."
    section_severity: str | None = None  # "Error 0, type: ..."
    section: bool | None = None  # "section_type: ...": whether a PCIe error section
    device: str | None = None  # "device_id: 0000:00:1c.0"
    vendor_device: str | None = None  # "vendor_id: 0x10de, device_id: 0x2335"
    aer: tuple[str | None, tuple[int, int]] | None = None  # "aer_[cor_|uncor_]status: ..."
    layer: str | None = None  # "aer_layer=...", as printed


Said = (
    Header
    | Containment
    | Trigger
    | NoDetails
    | BusError
    | Status
    | Bit
    | GhesStatus
    | GhesLayer
    | GhesSeverity
    | Cper
)


def might_be_aer(raw_line: str) -> bool:
    """Whether a line holds one of the words the check wants (`check.AER_WORDS`, bit indices):
    False only for lines `read_message` never needs (raw or body)."""
    return KERNEL_LOG.wanted(raw_line)


def read_message(body: str) -> Said | None:
    """What a message says (None: nothing an AER report is made of)."""
    if not might_be_aer(body):
        return None
    if "[Hardware Error]" in body:
        return _cper(body)
    prefix = _DEV_PREFIX.match(body)
    device: str | None
    if prefix is not None:
        device = normalise_bdf(prefix.group(1))
        rest = body[prefix.end() :]
    else:
        device = None
        rest = body.lstrip()
        if rest.startswith("AER:"):
            rest = rest[4:].lstrip()
    if rest.startswith("["):
        return _bit(device, rest)
    if rest.startswith("PCIe Bus Error"):
        return _bus_error(device, rest)
    if rest.startswith("device ["):
        return _status(device, rest)
    if rest.startswith("DPC"):
        return _dpc(device, rest)
    if "received" in rest:
        return _header(device, rest)
    if rest.startswith(("can't find device", "found no error details")):
        return _no_details(device, rest)
    if rest.startswith("aer_"):
        return _ghes(device, rest)
    return None


def _header(reporter: str | None, rest: str) -> Header | None:
    match = _HEADER.search(rest)
    if match is None:
        return None
    source: str | None = None
    source_id: int | None = None
    if match.group("src"):
        source = normalise_bdf(match.group("src"))
        source_id = bdf_id(source)
    elif match.group("id"):
        source_id = int(match.group("id"), 16)
    severity = severity_word(match.group("sev"))
    multiple = match.group("multi") is not None
    return Header(reporter, domain(reporter), severity, multiple, source, source_id)


def _dpc(port: str | None, rest: str) -> Containment | Trigger | None:
    """A containment report or its companion line, else nothing (the recovery, RP PIO and
    capability lines)."""
    text = rest[4:].lstrip() if rest.startswith(("DPC:", "DPC ")) else rest
    event = _DPC_EVENT.match(text)
    if event is not None:
        reason = event.group("received") or event.group("reason")
        named = reason is not None
        if reason is None:  # the companion line says it; meanwhile the status word does
            reason = _DPC_STATUS_REASON[(int(event.group("status"), 16) >> 1) & 3]
        source = normalise_bdf(event.group("src")) if event.group("src") else None
        return Containment(port, domain(port), _dpc_severity(reason.strip()), named, source)
    trigger = _DPC_TRIGGER.match(text)
    if trigger is not None:
        return Trigger(port, domain(port), _dpc_severity(trigger.group("reason")))
    return None


def _dpc_severity(reason: str) -> str:
    return _DPC_SEVERITY.get(reason, "nonfatal")


def _no_details(reporter: str | None, rest: str) -> NoDetails:
    match = _NO_DETAILS.match(rest)
    source: str | None = None
    source_id: int | None = None
    if match is not None and match.group("id"):
        source_id = int(match.group("id"), 16)
    elif match is not None and match.group("src"):
        source = normalise_bdf(match.group("src"))
        source_id = bdf_id(source)
    return NoDetails(reporter, domain(reporter), source, source_id)


def _bus_error(device: str | None, rest: str) -> BusError:
    match = _BUS_ERROR.match(rest)
    severity = severity_word(match.group("sev")) if match else None
    printed = match.group("type") if match else None
    layer = layer_type(printed.strip()) if printed else None
    return BusError(device, domain(device), severity, bool(printed), layer)


def _status(device: str | None, rest: str) -> Status | None:
    match = _STATUS.match(rest)
    if match is None:
        return None
    status, mask = int(match.group("status"), 16), int(match.group("mask"), 16)
    return Status(device, domain(device), match.group("vd").lower(), status, mask)


def _bit(device: str | None, rest: str) -> Bit | None:
    match = _BIT.match(rest)
    if match is None:
        return None
    return Bit(device, domain(device), (int(match.group("bit")), _bit_name(match.group("name"))))


def _ghes(device: str | None, rest: str) -> Said | None:
    """The kernel's own print of a firmware-first report (pci_print_aer)."""
    status = _AER_STATUS.match(rest)
    if status is not None:
        return GhesStatus(device, int(status.group("status"), 16), int(status.group("mask"), 16))
    layer = _AER_LAYER.match(rest)
    if layer is not None:
        return GhesLayer(device, layer.group("layer").strip())
    if rest.startswith("aer_uncor_severity"):
        return GhesSeverity(device)
    return None


def _cper(body: str) -> Cper | None:
    match = _CPER.search(body)
    if match is None or not body.lstrip().startswith(("{", "[Hardware Error]")):
        return None
    record = match.group("rec") or ""
    text = match.group("text").strip()
    if text.startswith("event severity:"):
        return Cper(record, False, event_severity=cper_severity(text.partition(":")[2]))
    if text.startswith("Error ") and "type:" in text:
        return Cper(record, False, section_severity=cper_severity(text.partition("type:")[2]))
    if text.startswith("section_type:"):
        return Cper(record, False, section="PCIe error" in text)
    return _cper_section_field(record, text)


def _cper_section_field(record: str, text: str) -> Cper:
    """A line of a CPER section's fields (or any other line of the record)."""
    if text.startswith("device_id:"):
        device = _CPER_DEVICE.match(text)
        bdf = normalise_bdf(device.group("bdf")) if device else None
        return Cper(record, False, device=bdf)
    if text.startswith("vendor_id:"):
        vendor = _CPER_VENDOR.match(text)
        vendor_device = None
        if vendor is not None:
            ids = int(vendor.group("vendor"), 16), int(vendor.group("device"), 16)
            vendor_device = f"{ids[0]:04x}:{ids[1]:04x}"
        return Cper(record, False, vendor_device=vendor_device)
    if text.startswith("aer_"):
        status = _AER_STATUS.match(text)
        aer = None
        if status is not None:
            pair = (int(status.group("status"), 16), int(status.group("mask"), 16))
            aer = (status.group("which"), pair)
        layer = _AER_LAYER.match(text)
        printed = layer.group("layer").strip() if layer else None
        return Cper(record, False, aer=aer, layer=printed)
    return Cper(record, text.startswith("Hardware error from"))


# -- small helpers -----------------------------------------------------------------------------


def normalise_bdf(text: str) -> str:
    """`dddd:bb:dd.f`, lower case, 4-digit domain added or padded (5-digit VMD kept)."""
    text = text.lower()
    first, sep, rest = text.partition(":")
    if rest.count(":") == 0:  # "bb:dd.f" with no domain
        return "0000:" + text
    return first.zfill(4) + sep + rest


def bdf_id(bdf: str) -> int:
    """The 16-bit requester id (bus << 8 | devfn) of a bus id."""
    bus, slot_fn = bdf.split(":")[-2:]
    slot, _, fn = slot_fn.partition(".")
    return int(bus, 16) << 8 | int(slot, 16) << 3 | int(fn)


def domain(bdf: str | None) -> str | None:
    """The PCI domain of a bus id ("0000" of "0000:98:00.0")."""
    return bdf.partition(":")[0] if bdf is not None else None


def severity_word(text: str) -> str | None:
    lowered = text.lower()
    if "non-fatal" in lowered:
        return "nonfatal"
    if "fatal" in lowered:
        return "fatal"
    if "correct" in lowered:
        return "corrected"
    return None


def cper_severity(text: str) -> str:
    """CPER severities as the kernel maps them (cper_severity_to_aer)."""
    word = text.strip().lower()
    if word.startswith("recoverable"):
        return "nonfatal"
    if word.startswith("fatal"):
        return "fatal"
    return "corrected"


def layer_type(text: str | None) -> str | None:
    """The `type` a printed layer gives (None: no layer of the three)."""
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
        long_name = LONG_NAMES.get(name)
        if long_name is not None:
            return long_name
    return None
