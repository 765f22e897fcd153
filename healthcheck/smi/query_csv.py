"""`nvidia-smi --query-*=... --format=csv[,noheader][,nounits]`: rows keyed by field name.

Columns are chosen by the header's names, never by position, so any subset or order an operator
saved by hand reads the same. A header cell ``power.draw [W]`` is the field ``power.draw`` with
unit ``W``; the unit is given to values printed without one (``nounits``). Names are mapped to
the current ones: ``clocks_throttle_reasons.*`` -> ``clocks_event_reasons.*`` (renamed in the
535 drivers) and the short aliases nvidia-smi accepts (``clocks.sm``, ``clocks.max.mem``,
``retired_pages.sbe``, ``inforom.image``, ...). Per-process queries keep their own names
(``gpu_name``, ``gpu_uuid``, ``pid``, ``used_gpu_memory``).

Quirks taken: spaces after commas, ``[N/A]`` vs bare ``N/A`` vs ``[Not Supported]`` vs
``[Requested functionality has been deprecated]``, empty cells (``, ,``), Windows/WDDM output
(CRLF, BOM, ``WDDM`` driver model, ``[N/A]`` persistence mode), header-only output (no rows), a
repeated header (concatenated runs), and the tool's error lines between rows (a GPU that fell off
the bus: ``Unable to determine the device handle for GPU3: 0000:04:00.0: Unknown Error``), which
come back as `SmiError`s from `parse_query_csv_result`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from msgspec import Struct

from .values import (
    SmiError,
    SmiParseError,
    Value,
    ValueKind,
    data_lines,
    decode,
    is_command_echo,
)

__all__ = [
    "QueryCsv",
    "canonical_field",
    "field_bitmask",
    "field_bool",
    "field_float",
    "field_int",
    "field_str",
    "field_value",
    "parse_query_csv",
    "parse_query_csv_result",
]

# Short names nvidia-smi accepts for a field (from --help-query-gpu / --help-query-compute-apps),
# by lower-cased alias.
_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "clocks.gr": "clocks.current.graphics",
        "clocks.sm": "clocks.current.sm",
        "clocks.mem": "clocks.current.memory",
        "clocks.video": "clocks.current.video",
        "clocks.applications.gr": "clocks.applications.graphics",
        "clocks.applications.mem": "clocks.applications.memory",
        "clocks.default_applications.gr": "clocks.default_applications.graphics",
        "clocks.default_applications.mem": "clocks.default_applications.memory",
        "clocks.max.gr": "clocks.max.graphics",
        "clocks.max.mem": "clocks.max.memory",
        "retired_pages.sbe": "retired_pages.single_bit_ecc.count",
        "retired_pages.dbe": "retired_pages.double_bit.count",
        "inforom.image": "inforom.img",
        "inforom.power": "inforom.pwr",
        "gpu_operation_mode.current": "gom.current",
        "gpu_operation_mode.pending": "gom.pending",
        "used_memory": "used_gpu_memory",
    }
)
# Renamed families: old prefix -> current prefix.
_RENAMED_PREFIXES: tuple[tuple[str, str], ...] = (
    ("clocks_throttle_reasons.", "clocks_event_reasons."),
)
# Fields whose N/A means the GPU or platform lacks the feature (no fan on SXM, no HBM sensor on
# GeForce, no ECC, no fabric, Linux-only persistence mode on Windows, ...): read as NOT_SUPPORTED.
# N/A elsewhere (power draw, temperature.gpu, clocks, utilization.gpu, memory, PCIe link) is
# NOT_AVAILABLE: a reading the GPU normally gives.
_NA_MEANS_UNSUPPORTED: tuple[str, ...] = (
    "fan.",
    "temperature.memory",
    "temperature.gpu.tlimit",
    "module.",
    "power_smoothing.",
    "power.management",
    "edpp_multiplier",
    "ecc.",
    "retired_pages.",
    "remapped_rows.",
    "fabric.",
    "platform.",
    "vgpu_",
    "protected_memory.",
    "driver_model.",
    "gom.",
    "inforom.",
    "dramencryption.",
    "c2c.",
    "gsp.",
    "mig.",
    "pcie.link.gen.hostmax",
    "serial",
    "display_",
    "addressing_mode",
    "accounting.",
    "persistence_mode",
    "reset_status.",
    "gpu_recovery_action",
    "encoder.stats.",
    "utilization.encoder",
    "utilization.decoder",
    "utilization.jpeg",
    "utilization.ofa",
    "clocks.applications.",
    "clocks.default_applications.",
    "clocks_event_reasons_counters.",
)

_HEADER_CELL = re.compile(r"^(?P<name>[a-z_][A-Za-z0-9_.]*)(?:\s*\[(?P<unit>[^\[\]]*)\])?$")


class _Column(Struct, frozen=True):
    """One header cell: as printed, the field's current name and its bracketed unit."""

    printed: str
    field: str
    unit: str | None


class QueryCsv(Struct, frozen=True):
    """A parsed CSV query: `fields` (current names, printed order), `units` by field (from the
    header's brackets), `rows` (field -> Value), the line of each row, and the error lines."""

    fields: tuple[str, ...]
    units: Mapping[str, str | None]
    rows: tuple[dict[str, Value], ...]
    row_lines: tuple[int, ...]
    errors: tuple[SmiError, ...]


def canonical_field(name: str) -> str:
    """The current name of a query field: unit brackets dropped, aliases and renames undone."""
    bare = name.strip()
    bracket = bare.find("[")
    if bracket > 0:
        bare = bare[:bracket].strip()
    low = bare.lower()
    if low in _ALIASES:
        return _ALIASES[low]
    for old, new in _RENAMED_PREFIXES:
        if low.startswith(old):
            return new + bare[len(old) :]
    return bare


def _na_kind(field: str) -> ValueKind:
    low = field.lower()
    if any(low.startswith(prefix) for prefix in _NA_MEANS_UNSUPPORTED):
        return ValueKind.NOT_SUPPORTED
    return ValueKind.NOT_AVAILABLE


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split(",")]


def _header(cells: list[str]) -> list[_Column] | None:
    columns: list[_Column] = []
    for cell in cells:
        match = _HEADER_CELL.match(cell)
        if match is None:
            return None
        unit = (match["unit"] or "").strip() or None
        columns.append(_Column(match["name"], canonical_field(match["name"]), unit))
    return columns


def _check_columns(columns: list[_Column], line_no: int | None) -> list[_Column]:
    """Refuse two columns for one field unless one is printed under the current name (it wins,
    whatever the order); the result keeps printed order with the losers dropped."""
    by_field: dict[str, list[_Column]] = {}
    for column in columns:
        by_field.setdefault(column.field.lower(), []).append(column)
    keep: list[_Column] = []
    for column in columns:
        group = by_field[column.field.lower()]
        if len(group) == 1:
            keep.append(column)
            continue
        current = [c for c in group if c.printed.lower() == c.field.lower()]
        if len(current) != 1:
            raise SmiParseError(f"field {column.field!r} appears more than once", line_no)
        if column is current[0]:
            keep.append(column)
    return keep


def _row(
    cells: list[str], columns: list[_Column], kept: list[_Column], line_no: int
) -> dict[str, Value]:
    if len(cells) != len(columns):
        raise SmiParseError(
            f"{len(cells)} values for {len(columns)} columns (a value with a comma?)", line_no
        )
    chosen = {id(c) for c in kept}
    row: dict[str, Value] = {}
    for column, cell in zip(columns, cells, strict=True):
        if id(column) in chosen:
            row[column.field] = decode(cell, unit=column.unit, na=_na_kind(column.field))
    return row


def _given_columns(fields: Sequence[str]) -> list[_Column]:
    columns: list[_Column] = []
    for name in fields:
        parsed = _header([name.strip()])
        if parsed is None:
            raise SmiParseError(f"not a query field name: {name!r}")
        columns.extend(parsed)
    if not columns:
        raise SmiParseError("fields= is empty")
    _check_columns(columns, None)
    return columns


def _same_fields(a: list[_Column], b: list[_Column]) -> bool:
    return sorted(c.field.lower() for c in a) == sorted(c.field.lower() for c in b)


def _other_header(columns: list[_Column], given: list[_Column]) -> bool:
    """A name-like first line that does not match fields=: another header (refused) when it
    has another width, a unit in brackets or a name of fields=; else a data row of lower-case
    words (``gpu_burn`` under ``process_name``)."""
    named = {c.field.lower() for c in given}
    return (
        len(columns) != len(given)
        or any(c.unit is not None for c in columns)
        or any(c.field.lower() in named for c in columns)
    )


def parse_query_csv_result(text: str, *, fields: Sequence[str] | None = None) -> QueryCsv:
    """Parse CSV query output. Without a header line (``noheader``) pass the queried `fields`;
    with a header, `fields` (if given) must name the same fields, in any order."""
    given = _given_columns(fields) if fields is not None else None
    columns: list[_Column] | None = None
    kept: list[_Column] = []
    header_cells: list[str] | None = None
    rows: list[dict[str, Value]] = []
    lines: list[int] = []
    errors: list[SmiError] = []
    for line_no, stripped in data_lines(text, errors):
        if is_command_echo(stripped):
            continue
        cells = _cells(stripped)
        if columns is None:
            header = _header(cells)
            if header is not None and given is not None and not _same_fields(header, given):
                if _other_header(header, given):
                    raise SmiParseError("the header names other fields than fields=", line_no)
                header = None
            if header is not None:
                kept = _check_columns(header, line_no)
                columns, header_cells = header, cells
                continue
            if given is None:
                raise SmiParseError(
                    "no CSV header line: pass fields= for --format=csv,noheader", line_no
                )
            columns = given
            kept = _check_columns(given, line_no)
        elif cells == header_cells:
            continue  # the header again: concatenated runs
        rows.append(_row(cells, columns, kept, line_no))
        lines.append(line_no)
    if columns is None:
        if given is None and not errors:
            raise SmiParseError("no CSV output (no header, no rows)")
        # noheader output of a query with no rows (no compute processes) is empty
        kept = _check_columns(given, None) if given is not None else []
    return QueryCsv(
        fields=tuple(c.field for c in kept),
        units={c.field: c.unit for c in kept},
        rows=tuple(rows),
        row_lines=tuple(lines),
        errors=tuple(errors),
    )


def parse_query_csv(text: str, *, fields: Sequence[str] | None = None) -> list[dict[str, Value]]:
    """The rows of CSV query output, each keyed by current field name. Error lines between rows
    are dropped here: use `parse_query_csv_result` to see them (a lost GPU has no row)."""
    return list(parse_query_csv_result(text, fields=fields).rows)


def field_value(row: Mapping[str, Value], name: str) -> Value:
    """A field of a row by any of its names (current, alias, old name; any case).
    Raises KeyError when the row has no such column (it was not queried)."""
    wanted = canonical_field(name)
    if wanted in row:
        return row[wanted]
    low = wanted.lower()
    for key, value in row.items():
        if key.lower() == low:
            return value
    raise KeyError(name)


def field_float(row: Mapping[str, Value], name: str) -> float | None:
    return field_value(row, name).as_float()


def field_int(row: Mapping[str, Value], name: str) -> int | None:
    return field_value(row, name).as_int()


def field_str(row: Mapping[str, Value], name: str) -> str | None:
    return field_value(row, name).as_text()


def field_bitmask(row: Mapping[str, Value], name: str) -> int | None:
    return field_value(row, name).as_bitmask()


def field_bool(row: Mapping[str, Value], name: str) -> bool | None:
    return field_value(row, name).as_bool()
