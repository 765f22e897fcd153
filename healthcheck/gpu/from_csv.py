"""`nvidia-smi --query-gpu` CSV (one sample, whatever fields it has, read by header name) and
`dmon` rows (one sample per row) → GPU records in snapshot shape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..smi.dmon import DmonRow, parse_dmon
from ..smi.query_csv import QueryCsv, field_value, parse_query_csv_result
from ..smi.values import SmiParseError, Value, ValueKind, absent
from ..sources.nvml_record import normalise_bus_id
from .calls import SMI
from .records import is_lost_line, lost_record, new_record, put, reading
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
    driver: str | None = None
    if query_text is not None:
        try:
            parsed = parse_query_csv_result(query_text)
        except SmiParseError as exc:
            issues.append(f"{query_ref}: {exc}")
        else:
            refs.append(query_ref)
            driver = _records_from_csv(parsed, query_ref, records, issues)
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
    return GpuFleet(gpus, SMI, ref, tuple(issues), driver_version=driver)


def _records_from_csv(
    parsed: QueryCsv, ref: str, records: dict[int, dict[str, Any]], issues: list[str]
) -> str | None:
    """Fill `records` from the CSV rows; the driver version the rows print, if any."""
    fields = {f.lower() for f in parsed.fields}
    versions = [_cell(row, "driver_version").as_text() for row in parsed.rows]
    for position, row in enumerate(parsed.rows):
        index_value = row.get("index")
        listed = index_value.as_int() if index_value is not None else None
        index = position if listed is None else listed
        record = records.setdefault(index, new_record(index))
        _csv_identity(row, record)
        for name, path, key in _CSV_INVENTORY:
            key = key or ".".join(path)
            put(record, path, key, _cell(row, name), name, flag=name in _CSV_FLAGS)
        mode = _cell(row, "ecc.mode.current")
        put(record, ("ecc", "mode_enabled"), "ecc.mode", mode, "ecc.mode.current", flag=True)
        limit_name = next((n for n in _CSV_POWER_LIMITS if n in fields), _CSV_POWER_LIMITS[0])
        limit = _cell(row, limit_name)
        put(record, ("power", "enforced_limit_w"), "power.limit", limit, limit_name)
        sample: dict[str, Any] = {"t": 0.0, "source": ref}
        for name, key_in_sample, key in _CSV_SAMPLE:
            sample[key_in_sample] = reading(
                record, key, _cell(row, name), name, bitmask=key == "clock_event_reasons"
            )
        record["samples"].append(sample)
        for cell_value in row.values():
            if cell_value.kind is ValueKind.LOST:
                record["lost"] = {"state": "gpu_lost", "detail": f"{ref}: {cell_value.raw}"}
                break
    for error in parsed.errors:
        if not is_lost_line(error):
            issues.append(f"{ref}: {error.message}")
            continue
        if error.gpu_index is None:
            issues.append(f"{ref}: a GPU without a row: {error.message}")
            continue
        record = records.setdefault(error.gpu_index, new_record(error.gpu_index))
        lost = lost_record(error.gpu_index, error, f"{ref}: {error.message}")
        record["pci_bus_id"] = lost.get("pci_bus_id")
        record["lost"] = lost["lost"]
    return next((v for v in versions if v), None)


# CSV fields -> identity keys of the record (text as printed, bus id normalised).
_CSV_IDENTITY = (
    ("name", "name"),
    ("uuid", "uuid"),
    ("pci.bus_id", "pci_bus_id"),
    ("serial", "serial"),
    ("vbios_version", "vbios"),
    ("inforom.img", "inforom_image"),
    ("gpu_recovery_action", "recovery_action"),
)


def _csv_identity(row: Mapping[str, Value], record: dict[str, Any]) -> None:
    for field_name, key in _CSV_IDENTITY:
        text = _cell(row, field_name).as_text()
        if not text:
            continue
        if key == "pci_bus_id":
            record[key] = normalise_bus_id(text)
        elif key == "recovery_action":
            record[key] = "_".join(text.lower().split())
        else:
            record[key] = text
    device = _cell(row, "pci.device_id")
    if device.kind is ValueKind.HEX and isinstance(device.number, int):
        record["pci_device_id"] = f"{device.number:08x}"
    put(record, ("persistence_mode",), "persistence_mode", _cell(row, "persistence_mode"),
        "persistence_mode", flag=True)  # fmt: skip


def _cell(row: Mapping[str, Value], name: str) -> Value:
    try:
        return field_value(row, name)
    except KeyError:
        return absent()


def _add_dmon(
    rows: list[DmonRow], records: dict[int, dict[str, Any]], issues: list[str], ref: str
) -> None:
    for row in rows:
        if row.is_process:
            continue
        if row.gpu is None:
            issues.append(f"{ref}:{row.line}: GPU {row.gpu_id!r} is not an index")
            continue
        record = records.setdefault(row.gpu, new_record(row.gpu))
        sample: dict[str, Any] = {"t": None, "source": ref}
        for columns, name, scale, key in _DMON_SAMPLE:
            value = next((v for c in columns if (v := row.get(c)) is not None), None)
            if value is None:
                continue
            found = reading(record, key, value, f"dmon {columns[0]}")
            sample[name] = None if found is None else round(float(found) * scale, 3)
        replay = row.get("pci")
        if replay is not None:
            count = reading(record, "pcie.replay", replay, "dmon pci")
            record.setdefault("pcie", {}).setdefault("replay_counter_start", count)
        record["samples"].append(sample)
