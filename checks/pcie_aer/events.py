"""An AER report as the facts have it (`AerEvent`, `DpcEvent`), and the error bits' names.

The facts document's section "aer" gives the keys (`AerEvent.to_fact()`, plus `time`); the bit
names are the kernel's current short ones (drivers/pci/pcie/aer.c).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from msgspec import Struct

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

# A block's bit lines as printed: each bit's index and its current name (None: named by index)
Bits = tuple[tuple[int, str | None], ...]


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


def error_names(severity: Severity, status: tuple[int, int] | None, bits: Bits) -> tuple[str, ...]:
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
