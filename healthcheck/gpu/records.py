"""Building GPU records in snapshot shape from nvidia-smi's printed values (shared by the CSV,
dmon and `-q` adapters): a reading is a number or a flag; anything else is no number, its key
noted in the record's `unavailable` map with a state, and a fault also in `failures`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..smi.values import SmiError, SmiErrorKind, SmiParseError, Value, ValueKind
from ..sources.nvml_record import normalise_bus_id

# A sample field -> the unavailable key that says why it is missing.
SAMPLE_KEYS: Mapping[str, str] = {
    "util_gpu": "utilization",
    "util_mem": "utilization",
    "power_w": "power.draw",
    "sm_clock_mhz": "clocks.sm",
    "mem_clock_mhz": "clocks.mem",
    "temp_c": "temperature.gpu",
    "mem_temp_c": "temperature.memory",
    "clock_event_reasons": "clock_event_reasons",
    "pcie_tx_kbps": "pcie.tx",
    "pcie_rx_kbps": "pcie.rx",
}
# The keys whose readings are counts: a negative one is invalid input, refused (not a reading).
COUNTER_KEYS = frozenset(
    {
        "ecc.volatile.corrected",
        "ecc.volatile.uncorrected",
        "ecc.aggregate.corrected",
        "ecc.aggregate.uncorrected",
        "remap",
        "remap.histogram",
        "retired_pages",
        "pcie.replay",
    }
)
_STATE_OF_KIND: Mapping[ValueKind, str] = {
    ValueKind.NOT_SUPPORTED: "not_supported",
    ValueKind.NOT_AVAILABLE: "not_available",
    ValueKind.EMPTY: "not_available",
    ValueKind.ABSENT: "not_queried",
    ValueKind.ERROR: "error",
    ValueKind.LOST: "gpu_lost",
}


def new_record(index: int) -> dict[str, Any]:
    return {"index": index, "unavailable": {}, "failures": {}, "samples": []}


def reading(
    record: dict[str, Any],
    key: str,
    value: Value,
    field_name: str,
    *,
    flag: bool = False,
    bitmask: bool = False,
) -> Any:
    """The value as the snapshot would hold it; a missing one is noted under `key`."""
    if value.is_missing:
        state = _STATE_OF_KIND.get(value.kind, "not_available")
        record["unavailable"].setdefault(key, state)
        if value.is_fault:
            record["failures"].setdefault(key, f"nvidia-smi {field_name}: {value.raw}")
        return None
    try:
        if flag:
            return value.as_bool()
        if bitmask:
            return value.as_bitmask()
        number = value.as_float()
    except SmiParseError:
        return _refused(record, key, f"nvidia-smi {field_name}: unreadable value {value.raw!r}")
    if key in COUNTER_KEYS and number is not None and number < 0:
        why = f"nvidia-smi {field_name}: {value.raw!r} is negative, not a count; refused"
        return _refused(record, key, why)
    return value.number


def _refused(record: dict[str, Any], key: str, why: str) -> None:
    """A value printed that is no reading: noted as an error under `key`."""
    record["unavailable"].setdefault(key, "error")
    record["failures"].setdefault(key, why)
    return None


def put(
    record: dict[str, Any],
    path: tuple[str, ...],
    key: str,
    value: Value,
    field_name: str,
    flag: bool = False,
) -> None:
    found = reading(record, key, value, field_name, flag=flag)
    node = record
    for part in path[:-1]:
        node = node.setdefault(part, {})
    if found is not None or path[-1] not in node:
        node[path[-1]] = found


def is_lost_line(error: SmiError) -> bool:
    """An error line that stands for one GPU (lost, or its handle could not be opened)."""
    return error.kind in (SmiErrorKind.GPU_LOST, SmiErrorKind.DEVICE_HANDLE)


def lost_record(index: int, error: SmiError, detail: str) -> dict[str, Any]:
    """The record of a GPU nvidia-smi printed an error line for: its bus id and lost state."""
    record = new_record(index)
    bus = normalise_bus_id(error.bus_id)
    if bus:
        record["pci_bus_id"] = bus
    state = "gpu_lost" if error.kind is SmiErrorKind.GPU_LOST else "error"
    record["lost"] = {"state": state, "detail": detail}
    return record
