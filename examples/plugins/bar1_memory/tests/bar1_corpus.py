"""The BAR1 readings of real GPUs (corpus/bar1-readings.json, sources in corpus/SOURCES.md),
as the check receives them: `NvmlReadings`, one GPU per reading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sitscheck.contract import NvmlGpu, NvmlReadings, NvmlValue

from sitscheck_bar1_memory.check import BAR1

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
BUNDLE = HERE / "bundles" / "h200x2-fake-node"
MIB = 1 << 20


def readings() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads((CORPUS / "bar1-readings.json").read_text())
    return entries


def nvml_value(entry: dict[str, Any]) -> NvmlValue:
    """The reading as NVML gives it (nvmlBAR1Memory_t, bytes), or NOT_SUPPORTED for `N/A`."""
    if entry["total_mib"] is None:
        detail = f"{BAR1.function}(handle): Not Supported (NVML_ERROR_NOT_SUPPORTED)"
        return NvmlValue(BAR1.key, BAR1.function, None, "not_supported", detail)
    value = {
        "bar1Total": entry["total_mib"] * MIB,
        "bar1Free": entry["free_mib"] * MIB,
        "bar1Used": entry["used_mib"] * MIB,
    }
    return NvmlValue(BAR1.key, BAR1.function, value)


def gpu(index: int, value: NvmlValue, lost: str | None = None) -> NvmlGpu:
    return NvmlGpu(
        index=index,
        pci_bus_id=f"0000:{index + 0x19:02x}:00.0",
        uuid=f"GPU-0000000{index}-0000-0000-0000-000000000000",
        name="NVIDIA H200",
        lost=lost,
        values={BAR1.key: value},
    )


def fleet(*values: NvmlValue, ref: str = "nvml") -> NvmlReadings:
    return NvmlReadings(tuple(gpu(i, v) for i, v in enumerate(values)), ref)
