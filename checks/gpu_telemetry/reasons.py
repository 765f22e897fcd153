"""Pure: NVML clock event (throttle) reason bits, named."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# nvmlClocksEventReason* bit values (nvml.h); the names are also nvidia-smi's
# `clocks_event_reasons.*` fields.
REASON_BITS: Mapping[str, int] = {
    "gpu_idle": 0x1,
    "applications_clocks_setting": 0x2,
    "sw_power_cap": 0x4,
    "hw_slowdown": 0x8,
    "sync_boost": 0x10,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
    "display_clock_setting": 0x100,
}


def decode(mask: int) -> list[str]:
    """The names of the bits set in `mask` (unknown bits as hex)."""
    names = [name for name, bit in REASON_BITS.items() if mask & bit]
    known = sum(REASON_BITS.values())
    if mask & ~known:
        names.append(f"0x{mask & ~known:x}")
    return names


def fractions(masks: Iterable[int]) -> dict[str, float] | None:
    """For each named reason, the fraction of samples in which it was active."""
    readings = list(masks)
    if not readings:
        return None
    return {
        name: round(sum(1 for m in readings if m & bit) / len(readings), 3)
        for name, bit in REASON_BITS.items()
    }
