"""`nvidia-smi dmon` and `nvidia-smi pmon`: one row per GPU (or process) per sample.

    # gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk
    # Idx      W      C      C      %      %      %      %      %      %    MHz    MHz
        0     69     41     47      0      0      0      0      0      0   2619    345

Columns are taken by the names on the ``#`` header line and their units from the ``#`` line
under it, for any ``-s`` selection and any driver (the 2016 ``pwr temp ... pviol tviol fb bar1
sbecc dbecc pci rxpci txpci`` set, the 4-column ``-s u`` form, the 590 ``gtemp mtemp ... jpg
ofa`` set, ``-o DT`` date/time columns, comma-separated ``--format csv``). The header may repeat;
each new one applies to the rows after it. A ``-`` cell is a missing value: in dmon a metric the
GPU does not support (ECC counters without ECC, ``mtemp`` without an HBM sensor, ...), in pmon a
process that had no sample in that interval. pmon's last column (``command``) may hold spaces.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

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

__all__ = ["Dmon", "DmonRow", "parse_dmon", "parse_dmon_result"]

_FIRST_COLUMNS = frozenset({"gpu", "date", "time"})
# Units-line tokens that are not units of a number.
_NOT_UNITS = frozenset({"idx", "#", "c/g", "name", "yyyymmdd", "hh:mm:ss"})
# dmon metrics that are "-" because the GPU lacks the feature.
_DASH_UNSUPPORTED = frozenset(
    {"mtemp", "sbecc", "dbecc", "enc", "dec", "jpg", "ofa", "pviol", "tviol", "ccpm", "fan"}
)
_MAX_COLUMNS = 256
_INDEX = re.compile(r"[0-9]{1,9}")


class DmonRow(Struct, frozen=True):
    """One sample line. `gpu` is the ``gpu`` column as an index (None when it is not a number,
    e.g. a bus id); `gpu_id` is that cell as printed. `values` holds every other column by its
    header name; `units` each column's units-line token (``W``, ``C``, ``%``, ``MHz``, ``MB``,
    ``bool``, ``errs``, ``C/G``, ...)."""

    gpu: int | None
    gpu_id: str
    values: Mapping[str, Value]
    units: Mapping[str, str]
    line: int

    def get(self, column: str) -> Value | None:
        """A column's value by name (any case); None when this output has no such column."""
        if column in self.values:
            return self.values[column]
        low = column.lower()
        for key, value in self.values.items():
            if key.lower() == low:
                return value
        return None

    @property
    def is_process(self) -> bool:
        """A pmon row (it has a ``pid`` column)."""
        return "pid" in self.values


class Dmon(Struct, frozen=True):
    """A parsed `dmon`/`pmon` output: its sample rows and the errors it printed."""

    rows: tuple[DmonRow, ...]
    errors: tuple[SmiError, ...]


class _Header(Struct, frozen=True):
    """The ``#`` header lines in effect: column names, units (second line), commas or not."""

    names: tuple[str, ...]
    units: tuple[str, ...]
    commas: bool


def _split(body: str, commas: bool) -> list[str]:
    if commas:
        return [cell.strip() for cell in body.split(",")]
    return body.split()


def _names(body: str, line_no: int) -> tuple[tuple[str, ...], bool] | None:
    commas = "," in body
    names = tuple(_split(body, commas))
    if not names or names[0].lower() not in _FIRST_COLUMNS:
        return None
    if "gpu" not in (n.lower() for n in names):
        raise SmiParseError("dmon/pmon header without a gpu column", line_no)
    if len(names) > _MAX_COLUMNS or len({n.lower() for n in names}) != len(names):
        raise SmiParseError("dmon/pmon header with repeated or too many columns", line_no)
    if any(not n for n in names):
        raise SmiParseError("dmon/pmon header with an empty column name", line_no)
    return names, commas


def _dash(column: str, process: bool) -> Value:
    if not process and column.lower() in _DASH_UNSUPPORTED:
        return Value("-", ValueKind.NOT_SUPPORTED)
    return Value("-", ValueKind.NOT_AVAILABLE)


def _row(cells: list[str], header: _Header, line_no: int) -> DmonRow:
    names = header.names
    if len(cells) > len(names) and names[-1].lower() == "command" and not header.commas:
        cells = [*cells[: len(names) - 1], " ".join(cells[len(names) - 1 :])]
    if len(cells) != len(names):
        raise SmiParseError(f"{len(cells)} cells for {len(names)} columns", line_no)
    process = "pid" in (n.lower() for n in names)
    gpu_id = ""
    values: dict[str, Value] = {}
    units: dict[str, str] = {}
    for index, (name, cell) in enumerate(zip(names, cells, strict=True)):
        unit = header.units[index] if index < len(header.units) else ""
        if name.lower() == "gpu":
            gpu_id = cell
            continue
        units[name] = unit
        if cell == "-":
            values[name] = _dash(name, process)
        else:
            hint = unit if unit and unit.lower() not in _NOT_UNITS else None
            values[name] = decode(cell, unit=hint)
    gpu = int(gpu_id) if _INDEX.fullmatch(gpu_id) else None
    return DmonRow(gpu, gpu_id, values, units, line_no)


def parse_dmon_result(text: str) -> Dmon:
    """Parse dmon or pmon output, keeping the tool's error lines."""
    header: _Header | None = None
    awaiting_units = False
    rows: list[DmonRow] = []
    errors: list[SmiError] = []
    for line_no, stripped in data_lines(text, errors):
        if stripped.startswith("\\#"):
            stripped = stripped[1:]  # a markdown-escaped "#"
        if stripped.startswith("#"):
            body = stripped[1:]
            found = _names(body, line_no)
            if found is not None:
                names, commas = found
                header = _Header(names, (), commas)
                awaiting_units = True
                continue
            if awaiting_units and header is not None:
                units = tuple(_split(body, header.commas))
                if len(units) != len(header.names):
                    raise SmiParseError(
                        f"{len(units)} units for {len(header.names)} columns", line_no
                    )
                header = _Header(header.names, units, header.commas)
                awaiting_units = False
                continue
            raise SmiParseError(f"unexpected '#' line: {stripped[:80]!r}", line_no)
        if is_command_echo(stripped):
            continue
        if header is None:
            raise SmiParseError("dmon/pmon row before the '# gpu ...' header line", line_no)
        awaiting_units = False
        rows.append(_row(_split(stripped, header.commas), header, line_no))
    if header is None and not errors:
        raise SmiParseError("no dmon/pmon header line ('# gpu ...')")
    return Dmon(tuple(rows), tuple(errors))


def parse_dmon(text: str) -> list[DmonRow]:
    """The sample rows of dmon or pmon output (error lines dropped: see `parse_dmon_result`)."""
    return list(parse_dmon_result(text).rows)
