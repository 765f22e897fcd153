"""`nvidia-smi --query-gpu` CSV (one sample, whatever fields it has, read by header name) and
`dmon` rows (one sample per row) → GPU records in snapshot shape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..smi.dmon import DmonRow, parse_dmon
from ..smi.query_csv import QueryCsv, field_value, parse_query_csv_result
from ..smi.values import SmiErrorKind, SmiParseError, Value, ValueKind, absent
from ..sources.nvml_record import normalise_bus_id
from .calls import SMI
from .view import GpuFleet, GpuView

# nvidia-smi --query-gpu fields -> where the snapshot keeps them.
_CSV_INVENTORY: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # (field, path in the GPU record, unavailable key; "" when it is the path joined by dots)
    ("pcie.link.gen.current", ("pcie", "gen_current"), "pcie.gen_current"),
    ("pcie.link.gen.max", ("pcie", "gen_max"), "pcie.gen_max"),
    ("pcie.link.gen.gpumax", ("pcie", "gen_device_max"), "pcie.gen_device_max"),
    ("pcie.link.width.current", ("pcie", "width_current"), "pcie.width_current"),
    ("pcie.link.width.max", ("pcie", "width_max"), "pcie.width_max"),
    ("power.default_limit", ("power", "default_limit_w"), "power.default_limit"),
    ("clocks.max.sm", ("clocks_max_mhz", "sm"), "clocks_max.sm"),
    ("clocks.max.memory", ("clocks_max_mhz", "mem"), "clocks_max.mem"),
    ("ecc.errors.corrected.volatile.total", ("ecc", "volatile", "corrected"), ""),
    ("ecc.errors.uncorrected.volatile.total", ("ecc", "volatile", "uncorrected"), ""),
    ("ecc.errors.corrected.aggregate.total", ("ecc", "aggregate", "corrected"), ""),
    ("ecc.errors.uncorrected.aggregate.total", ("ecc", "aggregate", "uncorrected"), ""),
    ("remapped_rows.correctable", ("remap", "corrected"), "remap"),
    ("remapped_rows.uncorrectable", ("remap", "uncorrected"), "remap"),
    ("remapped_rows.pending", ("remap", "pending"), "remap"),
    ("remapped_rows.failure", ("remap", "failure"), "remap"),
    ("remapped_rows.histogram.max", ("remap", "histogram", "max"), "remap.histogram"),
    ("remapped_rows.histogram.high", ("remap", "histogram", "high"), "remap.histogram"),
    ("remapped_rows.histogram.partial", ("remap", "histogram", "partial"), "remap.histogram"),
    ("remapped_rows.histogram.low", ("remap", "histogram", "low"), "remap.histogram"),
    ("remapped_rows.histogram.none", ("remap", "histogram", "none"), "remap.histogram"),
    ("retired_pages.pending", ("retired_pages", "pending"), "retired_pages.pending"),
    ("retired_pages.single_bit_ecc.count", ("retired_pages", "sbe"), "retired_pages"),
    ("retired_pages.double_bit.count", ("retired_pages", "dbe"), "retired_pages"),
)
# Fields read as yes/no.
_CSV_FLAGS = frozenset(
    {"remapped_rows.pending", "remapped_rows.failure", "retired_pages.pending", "ecc.mode.current"}
)
# The enforced limit; `power.limit` (the requested one) when the output lacks it.
_CSV_POWER_LIMITS = ("enforced.power.limit", "power.limit")
# nvidia-smi fields -> sample fields and their unavailable key.
_CSV_SAMPLE: tuple[tuple[str, str, str], ...] = (
    ("utilization.gpu", "util_gpu", "utilization"),
    ("utilization.memory", "util_mem", "utilization"),
    ("power.draw", "power_w", "power.draw"),
    ("clocks.current.sm", "sm_clock_mhz", "clocks.sm"),
    ("clocks.current.memory", "mem_clock_mhz", "clocks.mem"),
    ("temperature.gpu", "temp_c", "temperature.gpu"),
    ("temperature.memory", "mem_temp_c", "temperature.memory"),
    ("clocks_event_reasons.active", "clock_event_reasons", "clock_event_reasons"),
)
# dmon columns -> sample fields (scale, unavailable key); the first column name present wins.
_DMON_SAMPLE: tuple[tuple[tuple[str, ...], str, float, str], ...] = (
    (("sm",), "util_gpu", 1.0, "utilization"),
    (("mem",), "util_mem", 1.0, "utilization"),
    (("pwr",), "power_w", 1.0, "power.draw"),
    (("pclk",), "sm_clock_mhz", 1.0, "clocks.sm"),
    (("mclk",), "mem_clock_mhz", 1.0, "clocks.mem"),
    (("gtemp", "temp"), "temp_c", 1.0, "temperature.gpu"),
    (("mtemp",), "mem_temp_c", 1.0, "temperature.memory"),
    (("txpci",), "pcie_tx_kbps", 1000.0, "pcie.tx"),
    (("rxpci",), "pcie_rx_kbps", 1000.0, "pcie.rx"),
)
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
_STATE_OF_KIND: Mapping[ValueKind, str] = {
    ValueKind.NOT_SUPPORTED: "not_supported",
    ValueKind.NOT_AVAILABLE: "not_available",
    ValueKind.EMPTY: "not_available",
    ValueKind.ABSENT: "not_queried",
    ValueKind.ERROR: "error",
    ValueKind.LOST: "gpu_lost",
}


def from_smi(
    query_text: str | None,
    query_ref: str,
    dmon_text: str | None,
    dmon_ref: str,
    problems: Sequence[str] = (),
) -> GpuFleet:
    """GPU records from `--query-gpu` CSV (one sample) and `dmon` rows (one sample per row)."""
    issues = list(problems)
    records: dict[int, dict[str, Any]] = {}
    refs: list[str] = []
    if query_text is not None:
        try:
            parsed = parse_query_csv_result(query_text)
        except SmiParseError as exc:
            issues.append(f"{query_ref}: {exc}")
        else:
            refs.append(query_ref)
            _records_from_csv(parsed, query_ref, records, issues)
    if dmon_text is not None:
        try:
            rows = parse_dmon(dmon_text)
        except SmiParseError as exc:
            issues.append(f"{dmon_ref}: {exc}")
        else:
            refs.append(dmon_ref)
            _add_dmon(rows, records, issues, dmon_ref)
    ref = " + ".join(refs) or query_ref
    gpus = tuple(GpuView(i, records[i], SMI, ref) for i in sorted(records))
    return GpuFleet(gpus, SMI, ref, tuple(issues))


def _new_record(index: int) -> dict[str, Any]:
    return {"index": index, "unavailable": {}, "failures": {}, "samples": []}


def _records_from_csv(
    parsed: QueryCsv, ref: str, records: dict[int, dict[str, Any]], issues: list[str]
) -> None:
    fields = {f.lower() for f in parsed.fields}
    for position, row in enumerate(parsed.rows):
        index_value = row.get("index")
        listed = index_value.as_int() if index_value is not None else None
        index = position if listed is None else listed
        record = records.setdefault(index, _new_record(index))
        _csv_identity(row, record)
        for name, path, key in _CSV_INVENTORY:
            key = key or ".".join(path)
            _put(record, path, key, _cell(row, name), name, flag=name in _CSV_FLAGS)
        mode = _cell(row, "ecc.mode.current")
        _put(record, ("ecc", "mode_enabled"), "ecc.mode", mode, "ecc.mode.current", flag=True)
        limit_name = next((n for n in _CSV_POWER_LIMITS if n in fields), _CSV_POWER_LIMITS[0])
        limit = _cell(row, limit_name)
        _put(record, ("power", "enforced_limit_w"), "power.limit", limit, limit_name)
        sample: dict[str, Any] = {"t": 0.0, "source": ref}
        for name, key_in_sample, key in _CSV_SAMPLE:
            sample[key_in_sample] = _reading(
                record, key, _cell(row, name), name, bitmask=key == "clock_event_reasons"
            )
        record["samples"].append(sample)
        for cell_value in row.values():
            if cell_value.kind is ValueKind.LOST:
                record["lost"] = {"state": "gpu_lost", "detail": f"{ref}: {cell_value.raw}"}
                break
    for error in parsed.errors:
        if error.kind not in (SmiErrorKind.GPU_LOST, SmiErrorKind.DEVICE_HANDLE):
            issues.append(f"{ref}: {error.message}")
            continue
        if error.gpu_index is None:
            issues.append(f"{ref}: a GPU without a row: {error.message}")
            continue
        record = records.setdefault(error.gpu_index, _new_record(error.gpu_index))
        record["pci_bus_id"] = normalise_bus_id(error.bus_id)
        state = "gpu_lost" if error.kind is SmiErrorKind.GPU_LOST else "error"
        record["lost"] = {"state": state, "detail": f"{ref}: {error.message}"}


def _csv_identity(row: Mapping[str, Value], record: dict[str, Any]) -> None:
    for field_name, key in (("name", "name"), ("uuid", "uuid"), ("pci.bus_id", "pci_bus_id")):
        value = row.get(field_name)
        text = value.as_text() if value is not None else None
        if text:
            record[key] = normalise_bus_id(text) if key == "pci_bus_id" else text


def _cell(row: Mapping[str, Value], name: str) -> Value:
    try:
        return field_value(row, name)
    except KeyError:
        return absent()


def _reading(
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
        value.as_float()
    except SmiParseError:
        record["unavailable"].setdefault(key, "error")
        record["failures"].setdefault(
            key, f"nvidia-smi {field_name}: unreadable value {value.raw!r}"
        )
        return None
    return value.number


def _put(
    record: dict[str, Any],
    path: tuple[str, ...],
    key: str,
    value: Value,
    field_name: str,
    flag: bool = False,
) -> None:
    reading = _reading(record, key, value, field_name, flag=flag)
    node = record
    for part in path[:-1]:
        node = node.setdefault(part, {})
    if reading is not None or path[-1] not in node:
        node[path[-1]] = reading


def _add_dmon(
    rows: list[DmonRow], records: dict[int, dict[str, Any]], issues: list[str], ref: str
) -> None:
    for row in rows:
        if row.is_process:
            continue
        if row.gpu is None:
            issues.append(f"{ref}:{row.line}: GPU {row.gpu_id!r} is not an index")
            continue
        record = records.setdefault(row.gpu, _new_record(row.gpu))
        sample: dict[str, Any] = {"t": None, "source": ref}
        for columns, name, scale, key in _DMON_SAMPLE:
            value = next((v for c in columns if (v := row.get(c)) is not None), None)
            if value is None:
                continue
            reading = _reading(record, key, value, f"dmon {columns[0]}")
            sample[name] = None if reading is None else round(float(reading) * scale, 3)
        replay = row.get("pci")
        if replay is not None:
            count = _reading(record, "pcie.replay", replay, "dmon pci")
            record.setdefault("pcie", {}).setdefault("replay_counter_start", count)
        record["samples"].append(sample)
