"""Pure: why no working driver serves the NVIDIA GPUs on the PCI bus, in the tools' own words.

When no source lists a GPU, what NVML, nvidia-smi and the kernel said is read for the signs
of a driver that cannot serve its GPUs (NVML's error names and strings, nvidia-smi's and the
kernel's messages, as they print them):

- a version mismatch: the libraries and the loaded kernel module are different versions
  (pynvml: NVML_ERROR_LIB_RM_VERSION_MISMATCH, "RM has detected an NVML/RM version mismatch.";
  nvidia-smi: "Failed to initialize NVML: Driver/library version mismatch"; the kernel:
  "NVRM: API mismatch: the client has the version X, but / this kernel module has the
  version Y");
- NVML's library missing (NVML_ERROR_LIBRARY_NOT_FOUND, "NVML Shared Library Not Found";
  nvidia-smi: "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.");
- the kernel module not loaded (NVML_ERROR_DRIVER_NOT_LOADED, "Driver Not Loaded"; nvidia-smi:
  "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.").

A failure with none of these signs (a hang, a crash, an unknown error) is not a verdict on
the driver: the check stays UNKNOWN with the reason. The finding names the GPUs on the bus
and quotes each source's words, made printable.
"""

from __future__ import annotations

from collections.abc import Sequence

from msgspec import Struct
from sitscheck.models import Evidence, Finding

from .codes import CODES

# In the order a verdict is taken: the most specific cause first.
SIGNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "driver.version_mismatch",
        (
            "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
            "Driver/library version mismatch",
            "NVML/RM version mismatch",
            "API mismatch: the client",
        ),
    ),
    (
        "driver.library_missing",
        (
            "NVML_ERROR_LIBRARY_NOT_FOUND",
            "NVML Shared Library Not Found",
            "couldn't find libnvidia-ml.so",
        ),
    ),
    (
        "driver.not_loaded",
        (
            "NVML_ERROR_DRIVER_NOT_LOADED",
            "Driver Not Loaded",
            "couldn't communicate with the NVIDIA driver",
        ),
    ),
)
# how a command that is not there is named (`CommandRunner`): nvidia-smi missing is a sign of
# a driver's user space missing only beside NVML's own word (NVML serving the GPUs: info)
NOT_FOUND = "command not found"
QUOTE_CHARS = 300
BUS = "bus/pci/devices"  # where sysfs lists the PCI devices (vendor 0x10de, class 0x03xx)


class Said(Struct, frozen=True):
    """What one source said when it could not list the GPUs: its name, where, its words."""

    source: str  # NVML, nvidia-smi, kernel log, driver probe
    ref: str
    text: str


def named_failure(said: Sequence[Said]) -> tuple[str, list[Said]] | None:
    """The code of the first sign any source shows, and the sources showing it (one each)."""
    for code, signs in SIGNS:
        showing = [s for s in said if any(sign in s.text for sign in signs)]
        if showing:
            return code, _one_each(showing)
    return None


def shows_sign(text: str) -> bool:
    """Whether a tool's failure is one of the signs, or the tool is not there at all."""
    return NOT_FOUND in text or any(sign in text for _, signs in SIGNS for sign in signs)


def unserved(code: str, bus_ids: Sequence[str], said: Sequence[Said]) -> Finding:
    """The critical finding: no working driver serves the GPUs on the bus, and why, quoted."""
    spec = CODES.get(code)
    assert spec is not None, code
    if bus_ids:
        count = f"{len(bus_ids)} NVIDIA GPU{'s' if len(bus_ids) != 1 else ''}"
        where = f"the {count} on the PCI bus ({', '.join(bus_ids)})"
    else:
        where = "the node's NVIDIA GPUs (sysfs shows none on the PCI bus)"
    words = "; ".join(f'{s.source}: "{quote(s.text)}"' for s in said)
    return Finding(
        code=code,
        severity=spec.severity,
        message=f"no working driver serves {where}: {spec.meaning}"
        + (f"; {words}" if words else ""),
        evidence=[
            *([Evidence(source="sysfs", ref=BUS, excerpt=", ".join(bus_ids))] if bus_ids else []),
            *(Evidence(source=s.source, ref=s.ref, excerpt=quote(s.text)) for s in said),
        ],
        action=spec.action,
    )


def quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """A tool's words on one line, made printable: a control or format character (ESC, CR,
    a bidi override) is shown escaped (`\\x1b`, `\\u202e`), never passed to a terminal."""
    flat = " / ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    shown = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in flat)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def _one_each(said: list[Said]) -> list[Said]:
    """The first of each source (nvidia-smi's outputs all say the same)."""
    seen: dict[str, Said] = {}
    for item in said:
        seen.setdefault(item.source, item)
    return list(seen.values())
