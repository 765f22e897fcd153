"""What one printed `nvidia-smi` value means, and the tool's own error lines.

Every smi parser hands its cells to `decode`, which keeps apart:

* a reading: `NUMBER` (with its unit: ``65 W``, ``1980 MHz``, ``81559 MiB``, ``31 C``, ``12 %``,
  ``16x``, ``100.00%``, ``-8 C``), `HEX` (``0x0000000000000004``, bitmasks and ids) or `TEXT`
  (``Enabled``, ``P0``, ``96.00.A5.00.01``);
* no reading, and why: `NOT_SUPPORTED` (``[Not Supported]``, the 590-era
  ``[Requested functionality has been deprecated]``, and ``N/A`` where the caller knows that
  field is only ever ``N/A`` because the GPU lacks the feature), `NOT_AVAILABLE` (``N/A``,
  ``[N/A]`` anywhere else), `EMPTY` (printed as nothing), `ABSENT` (not printed at all, e.g. a
  ``-q -d`` subset);
* a fault: `ERROR` (``[Unknown Error]``, ``GPU requires reset`` and the other NVML error
  strings, bracketed or bare) and `LOST` (``[GPU is lost]``), which a check must not read as
  "feature missing". ``[Insufficient Permissions]``, ``No data`` and ``Not Ready`` say the
  caller got no value, not that the GPU failed: NOT_AVAILABLE.

A missing value never carries a number (no NaN); `Value.as_float` and friends return ``None``
for it and raise `SmiParseError` when a present value is not of the asked type.

The second half classifies the lines nvidia-smi prints instead of data (``No devices were
found``, ``Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error``, ...) as
typed `SmiError`s, shared by all parsers: a lost GPU's line can sit between the CSV rows or the
``-L`` lines of the GPUs that still answer.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterator

from msgspec import Struct

__all__ = [
    "KNOWN_UNITS",
    "SmiError",
    "SmiErrorKind",
    "SmiParseError",
    "Value",
    "ValueKind",
    "absent",
    "classify_message",
    "decode",
    "is_command_echo",
    "is_message_continuation",
    "normalize_text",
]


class SmiParseError(ValueError):
    """Text that the parser for its kind cannot read; `line` is 1-based where known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.message = message
        self.line = line
        super().__init__(f"line {line}: {message}" if line is not None else message)


class ValueKind(str, enum.Enum):
    NUMBER = "number"
    HEX = "hex"
    TEXT = "text"
    EMPTY = "empty"
    ABSENT = "absent"
    NOT_SUPPORTED = "not_supported"
    NOT_AVAILABLE = "not_available"
    ERROR = "error"
    LOST = "lost"


_MISSING = frozenset(
    {
        ValueKind.EMPTY,
        ValueKind.ABSENT,
        ValueKind.NOT_SUPPORTED,
        ValueKind.NOT_AVAILABLE,
        ValueKind.ERROR,
        ValueKind.LOST,
    }
)

# Units nvidia-smi prints after a number (-q, CSV with units, dmon's units line). A suffix not
# in this set makes the cell TEXT rather than a number with a made-up unit ("1e5", "3g").
KNOWN_UNITS = frozenset(
    (
        "W mW kW J mJ MHz GHz kHz B KiB MiB GiB TiB KB MB GB TB KB/s MB/s GB/s C F % "
        "us ms s ns mV V x bank(s) RPM fps"
    ).split()
)

_NUMBER = re.compile(r"^(?P<num>[+-]?\d{1,40}(?:\.\d{1,40})?)(?:\s*(?P<unit>\S+))?$")
_HEX = re.compile(r"^0[xX](?P<hex>[0-9A-Fa-f]{1,64})$")

# Error strings NVML returns (nvmlErrorString) that nvidia-smi prints in place of a value,
# bracketed in CSV ("[Unknown Error]") and bare in -q ("Power Draw : Unknown Error").
_NVML_ERRORS = frozenset(
    {
        "unknown error",
        "uninitialized",
        "invalid argument",
        "already initialized",
        "not found",
        "insufficient size",
        "insufficient external power",
        "driver not loaded",
        "timeout",
        "interrupted by irq",
        "lib rm version mismatch",
        "gpu requires reset",
        "gpu requires restart",
        "memory error",
        "corrupted inforom",
        "operating system has blocked the request",
        "rm has detected an nvml/rm version mismatch",
        "in use by another client",
        "insufficient resources",
        "function not found",
        "argument version mismatch",
        "gpu not found",
        "invalid state",
        "unable to communicate with gpu",
    }
)
# NVML answers that say "no value for this caller now", not that the GPU failed: NOT_AVAILABLE
# (a reading the running user has no rights to, a sample not taken yet).
_UNAVAILABLE = frozenset({"insufficient permissions", "no data", "not ready"})
_DEPRECATED = "requested functionality has been deprecated"
_TRUE = frozenset({"enabled", "yes", "active", "on", "true", "supported"})
_FALSE = frozenset({"disabled", "no", "not active", "off", "false"})


class Value(Struct, frozen=True):
    """One printed value. `raw` is the cell as printed (stripped); `number` is set only for
    NUMBER (int, or float when printed with a decimal point) and HEX (int); `unit` only for
    NUMBER."""

    raw: str
    kind: ValueKind
    number: int | float | None = None
    unit: str | None = None

    @property
    def is_missing(self) -> bool:
        """No reading: not supported, not available, empty, absent, an error or a lost GPU."""
        return self.kind in _MISSING

    @property
    def is_fault(self) -> bool:
        """The driver failed to answer (an NVML error or a lost GPU), not merely lacks it."""
        return self.kind in (ValueKind.ERROR, ValueKind.LOST)

    def _type_error(self, wanted: str) -> SmiParseError:
        return SmiParseError(f"expected {wanted}, got {self.raw!r}")

    def as_float(self) -> float | None:
        """The number (HEX read as its integer); None when missing."""
        if self.is_missing:
            return None
        if self.number is None:
            raise self._type_error("a number")
        return float(self.number)

    def as_int(self) -> int | None:
        """The number as an int (``700.00 W`` -> 700); None when missing; raises when the
        number has a fraction or the value is text."""
        if self.is_missing:
            return None
        if isinstance(self.number, int):
            return self.number
        if isinstance(self.number, float) and self.number.is_integer():
            return int(self.number)
        raise self._type_error("an integer")

    def as_bitmask(self) -> int | None:
        """A hex mask such as ``0x00000000000001FF`` (or a plain non-negative integer)."""
        if self.is_missing:
            return None
        if self.kind is ValueKind.HEX or (
            self.kind is ValueKind.NUMBER and isinstance(self.number, int) and self.number >= 0
        ):
            assert isinstance(self.number, int)
            return self.number
        raise self._type_error("a bitmask")

    def as_text(self) -> str | None:
        """The printed text of any present value; None when missing."""
        return None if self.is_missing else self.raw

    def as_bool(self) -> bool | None:
        """Enabled/Yes/Active/On/Supported -> True, Disabled/No/Not Active/Off -> False."""
        if self.is_missing:
            return None
        low = self.raw.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise self._type_error("a yes/no flag")


def absent() -> Value:
    """The value of a field the output did not print at all."""
    return Value("", ValueKind.ABSENT)


def _missing_kind(inner: str, bracketed: bool, na: ValueKind) -> ValueKind | None:
    low = " ".join(inner.lower().split())
    if low == "n/a":
        return na
    if low == "not supported":
        return ValueKind.NOT_SUPPORTED
    if low.startswith(_DEPRECATED):
        return ValueKind.NOT_SUPPORTED
    if low.startswith("gpu is lost"):
        return ValueKind.LOST
    if low in _UNAVAILABLE:
        return ValueKind.NOT_AVAILABLE
    if low in _NVML_ERRORS:
        return ValueKind.ERROR
    if bracketed:
        # nvidia-smi brackets only its special values; an unknown one is an error it reports.
        return ValueKind.ERROR
    return None


def _number(text: str) -> int | float | None:
    if "." in text:
        result = float(text)
        return result if math.isfinite(result) else None
    return int(text)


def decode(raw: str, *, unit: str | None = None, na: ValueKind = ValueKind.NOT_AVAILABLE) -> Value:
    """Decode one printed cell.

    `unit` is the unit known from elsewhere (a CSV header's ``[W]``, dmon's units line) and is
    given to a bare number (``--format=csv,nounits``); a unit printed in the cell wins. `na` is
    what ``N/A`` / ``[N/A]`` means for this field: NOT_AVAILABLE unless the caller knows the
    field is only ever N/A because the GPU lacks the feature (then NOT_SUPPORTED).
    """
    text = raw.strip()
    if not text:
        return Value("", ValueKind.EMPTY)
    bracketed = len(text) >= 2 and text[0] == "[" and text[-1] == "]"
    inner = text[1:-1].strip() if bracketed else text
    missing = _missing_kind(inner, bracketed, na)
    if missing is not None:
        return Value(text, missing)
    hex_match = _HEX.match(text)
    if hex_match:
        return Value(text, ValueKind.HEX, int(hex_match["hex"], 16))
    num_match = _NUMBER.match(text)
    if num_match:
        printed_unit = num_match["unit"]
        if printed_unit is None or printed_unit in KNOWN_UNITS:
            number = _number(num_match["num"])
            if number is not None:
                return Value(text, ValueKind.NUMBER, number, printed_unit or unit or None)
    return Value(text, ValueKind.TEXT)


def normalize_text(text: str) -> list[str]:
    """Split pasted text into lines: BOM, CRLF/CR endings and tabs (as 4 columns) undone."""
    if text.startswith("\ufeff"):
        text = text[1:]
    unified = text.replace("\r\n", "\n").replace("\r", "\n")
    return [line.expandtabs(4) for line in unified.split("\n")]


# --- the lines nvidia-smi prints instead of data ----------------------------------------------


class SmiErrorKind(str, enum.Enum):
    NO_DEVICES = "no_devices"  # "No devices were found"
    NO_DRIVER = "no_driver"  # "NVIDIA-SMI has failed because it couldn't communicate ..."
    VERSION_MISMATCH = "version_mismatch"  # "Failed to initialize NVML: Driver/library ..."
    NVML_INIT = "nvml_init"  # "Failed to initialize NVML: Unknown Error" and the like
    DEVICE_HANDLE = "device_handle"  # "Unable to determine the device handle for ...: <reason>"
    GPU_LOST = "gpu_lost"  # the same with "GPU is lost.  Reboot the system ..."
    NOT_INSTALLED = "not_installed"  # "nvidia-smi: command not found"


class SmiError(Struct, frozen=True):
    """A line nvidia-smi printed in place of data. `gpu_index` and `bus_id` are set when the
    line names the GPU (``GPU3: 0000:5F:00.0``); `reason` is the text after the last colon."""

    kind: SmiErrorKind
    message: str
    line: int
    gpu_index: int | None = None
    bus_id: str | None = None
    reason: str | None = None


_DEVICE_HANDLE = re.compile(
    r"^Unable to (?:determine|detect) the device handle for gpu\s*"
    r"(?:(?P<index>\d+):\s+)?"
    r"(?P<bus>[0-9a-f]{1,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]:\s*)?"
    r"(?P<reason>.*)$",
    re.IGNORECASE,
)
_NVML_INIT = re.compile(r"^Failed to initialize NVML:\s*(?P<reason>.*)$", re.IGNORECASE)
_NO_DEVICES = re.compile(r"^No devices (?:were )?found\.?$", re.IGNORECASE)
_NO_DRIVER = re.compile(r"^NVIDIA-SMI has failed because it couldn'?t communicate", re.IGNORECASE)
_NOT_INSTALLED = re.compile(
    r"^(?:-?\w*:\s*)?nvidia-smi(?:\.exe)?:?\s+(?:command )?not found$"
    r"|^\w+: command not found: nvidia-smi$"
    r"|^'nvidia-smi' is not recognized as an internal or external command",
    re.IGNORECASE,
)
# Lines that finish a message of the line before (NVML's version after a mismatch, the Windows
# hint after a failed driver contact).
_CONTINUATION = re.compile(
    r"^NVML library version:"
    r"|^This can also be happening if non-NVIDIA GPU is running as primary display"
    r"|^Please also try adding directory that contains"
    r"|^operable program or batch file\.?$",
    re.IGNORECASE,
)
_COMMAND_ECHO = re.compile(
    r"^(?:.{0,120}?[$#>]\s*)?(?:sudo\s+)?(?:\S*/)?nvidia-smi(?:\.exe)?(?:\s|$)"
)


def classify_message(line: str, line_no: int) -> SmiError | None:
    """The typed error a line of nvidia-smi output reports, or None for any other line."""
    text = line.strip()
    if not text:
        return None
    match = _DEVICE_HANDLE.match(text)
    if match:
        reason = match["reason"].strip()
        bus = match["bus"]
        index = match["index"]
        kind = (
            SmiErrorKind.GPU_LOST
            if reason.lower().startswith("gpu is lost")
            else SmiErrorKind.DEVICE_HANDLE
        )
        return SmiError(
            kind,
            text,
            line_no,
            gpu_index=int(index) if index is not None and len(index) < 10 else None,
            bus_id=bus.rstrip(": \t") if bus else None,
            reason=reason or None,
        )
    match = _NVML_INIT.match(text)
    if match:
        reason = match["reason"].strip()
        kind = (
            SmiErrorKind.VERSION_MISMATCH
            if "version mismatch" in reason.lower()
            else SmiErrorKind.NVML_INIT
        )
        return SmiError(kind, text, line_no, reason=reason or None)
    if _NO_DEVICES.match(text):
        return SmiError(SmiErrorKind.NO_DEVICES, text, line_no)
    if _NO_DRIVER.match(text):
        return SmiError(SmiErrorKind.NO_DRIVER, text, line_no)
    if _NOT_INSTALLED.match(text):
        return SmiError(SmiErrorKind.NOT_INSTALLED, text, line_no)
    return None


def is_message_continuation(line: str) -> bool:
    """A line that only completes the error message printed on the line before it."""
    return bool(_CONTINUATION.match(line.strip()))


def is_command_echo(line: str) -> bool:
    """A pasted shell prompt or command line that ran nvidia-smi (``root@n1:~# nvidia-smi -L``)."""
    return bool(_COMMAND_ECHO.match(line.strip()))


def data_lines(text: str, errors: list[SmiError]) -> Iterator[tuple[int, str]]:
    """The non-blank lines of an nvidia-smi output, stripped, with their 1-based numbers; the
    error messages the tool printed instead of data (and their continuation lines) are
    appended to `errors` instead of being yielded."""
    for line_no, line in indented_data_lines(normalize_text(text), errors):
        yield line_no, line.strip()


def indented_data_lines(lines: list[str], errors: list[SmiError]) -> Iterator[tuple[int, str]]:
    """`data_lines` over lines already normalised, each as printed (its indent kept)."""
    for line_no, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        error = classify_message(stripped, line_no)
        if error is not None:
            errors.append(error)
            continue
        if errors and is_message_continuation(stripped):
            continue
        yield line_no, line
