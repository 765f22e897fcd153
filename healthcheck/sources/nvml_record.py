"""One GPU's record in the NVML snapshot, and how NVML's values are written into it.

`GpuRecorder.read` keeps a reading's value, or notes in the record why there is none: every
reading that is not a value lands in `unavailable` with its state, and every failure other
than "not supported" in `failures` with the call and its error (missing is never zero).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the replay path (sitscheck.gpu) needs no NVML machinery
    from .nvml import Nvml, Reading

# States that mean the reading failed: the check that needs it cannot decide (UNKNOWN).
FAULT_STATES = frozenset({"error", "timeout"})
# Words for the state of a reading that is not a value (NVML's, and nvidia-smi's printed ones).
STATE_WORDS: Mapping[str, str] = {
    "not_supported": "not supported by this GPU or driver",
    "not_available": "not available (N/A)",
    "not_queried": "not in the evidence",
    "not_recorded": "not recorded in the evidence",
    "no_permission": "no permission to read it",
    "error": "the read failed",
    "timeout": "the read overran its deadline",
    "gpu_lost": "the GPU is lost",
    "reset_required": "the GPU needs a reset",
    "relative_only": "printed only relative to T.Limit (nvidia-smi -q, 550+): no absolute value",
    "one_reading": (
        "one reading only (its growth or rate needs the counter read at both ends of a "
        "sampling window: NVML)"
    ),
}


class GpuRecorder:
    """Collects one GPU's readings, noting every one that is not a value."""

    def __init__(self, nvml: Nvml, gpu: dict[str, Any]) -> None:
        self.nvml = nvml
        self.gpu = gpu
        self.unavailable: dict[str, str] = gpu.setdefault("unavailable", {})
        self.failures: dict[str, str] = gpu.setdefault("failures", {})

    def read(self, key: str, function: str, *args: Any) -> Any:
        reading = self.nvml.read(function, *args)
        return self.keep(key, reading)

    def keep(self, key: str, reading: Reading[Any]) -> Any:
        if reading.ok:
            return reading.value
        self.unavailable.setdefault(key, reading.state)
        if reading.state != "not_supported" and reading.detail:
            self.failures.setdefault(key, reading.detail)
        if reading.state in ("gpu_lost", "reset_required"):
            self.gpu["lost"] = {"state": reading.state, "detail": reading.detail}
        return None


def hw_id(index: int | None, uuid: str | None, pci_bus_id: str | None) -> str:
    """A GPU's metric label `hw.id`: its UUID, else its bus id, else `gpu<index>`."""
    return uuid or pci_bus_id or f"gpu{index}"


def normalise_bus_id(bus_id: str | None) -> str | None:
    """NVML's `00000000:19:00.0` → `0000:19:00.0` (lower case, 4-digit domain)."""
    if not bus_id:
        return None
    text = bus_id.strip().lower()
    domain, _, rest = text.partition(":")
    if not rest:
        return text
    if len(domain) > 4 and set(domain[:-4]) <= {"0"}:
        domain = domain[-4:]
    return f"{domain.zfill(4)}:{rest}"


def text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def flag(value: Any) -> bool | None:
    return None if value is None else bool(value)


def milli(value: Any) -> float | None:
    return None if value is None else round(float(value) / 1000.0, 3)
