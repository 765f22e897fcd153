"""Pure parser for ``nvidia-smi topo -m`` (also ``topo -mp`` and ``topo -p2p``) text.

The text is read as whitespace-separated tokens, so tab- and space-aligned tables, runs of
tabs (``\\t\\tN/A``), lost indentation and trailing blanks all read the same. ANSI escape
codes (current drivers underline the header row) are dropped first. The multi-word headers
``CPU Affinity``, ``NUMA Affinity`` and ``GPU NUMA ID`` are matched as units, also where a copy
ran the header's names together (``GPU0GPU1NIC0CPU AffinityNUMA Affinity``). Cells that a
too-narrow layout ran together (``NODENODE``, ``PIXPIX``) are split into link kinds where
exactly one split exists and the row has room for it. Old drivers' ``SOC`` (the later
``SYS``) is a link kind as printed.

An affinity column can print nothing (a container whose cpuset holds none of a NUMA node's
CPUs leaves that GPU's CPU Affinity empty): a GPU row with fewer affinity values than the
header has columns is read by the layout the full GPU rows show, and the column it leaves out
is the empty cell ``""``, not a reason to shift the values after it. With tabs, the layout is
the run of tabs around each value (nvidia-smi prints fixed ones: ``0-31\\t0\\t\\tN/A``, so a
double tab is one separator); without (a copy that expanded them), where each value starts.

No I/O here: the check hands in the text and gets a :class:`TopoMatrix` back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import pairwise

from msgspec import Struct

__all__ = [
    "Affinity",
    "TopoLink",
    "TopoMatrix",
    "TopoParseError",
    "gpu_pairs",
    "is_pcie_kind",
    "nvlink_count",
    "parse_topo",
]

# CSI sequences (``\x1b[4m``), any other lone ESC, and SGR codes whose ESC was lost in a copy.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b|\[[0-9;]*m")
_GPU_NAME = re.compile(r"GPU[0-9]+")
# A header row's units: an affinity header (its words may run into the names around it), a
# device name (several of which may have run together), or any other word.
_HEADER_UNIT = re.compile(
    r"(?P<gpu_numa_id>GPU\s*NUMA\s*ID)|(?P<cpu>CPU\s*Affinity)|(?P<numa>NUMA\s*Affinity)"
    r"|(?:GPU|NIC|mlx\d_)\d+(?=(?:GPU|NIC|mlx\d_)\d|CPU\s*Aff|NUMA\s*Aff|GPU\s*NUMA|\s|$)"
    r"|\S+",
    re.IGNORECASE,
)
_WORD = re.compile(r"\S+")
_VALUE = re.compile(r"N/A|[0-9][0-9,\-]*")
_NVLINK = re.compile(r"NV([0-9]+)")
_NIC_LEGEND_ENTRY = re.compile(r"(NIC[0-9]+)\s*:\s*(\S+)")
_DIGITS = frozenset("0123456789")

# Every word a topo matrix cell can hold, but NV# (handled apart): topo -m kinds, then p2p.
_FIXED_WORDS = (
    "X", "SYS", "SOC", "NODE", "PHB", "PXB", "PIX",
    "OK", "NS", "CNS", "GNS", "TNS", "DR", "U",
)  # fmt: skip
_PCIE_KINDS = frozenset({"PIX", "PXB", "PHB", "NODE", "SYS", "SOC"})

# Header units that are not device columns: the Affinity field each one fills.
_AFFINITY_FIELDS = ("gpu_numa_id", "cpu", "numa")
_TAB = 8  # nvidia-smi aligns with tabs; a row is read at the stops a terminal expands them to


class TopoParseError(ValueError):
    """Text that holds no topology table; ``line_number`` (1-based) names where."""

    def __init__(self, message: str, line_number: int) -> None:
        super().__init__(f"line {line_number}: {message}")
        self.message = message
        self.line_number = line_number

    def __reduce__(self) -> tuple[type[TopoParseError], tuple[str, int]]:
        return (type(self), (self.message, self.line_number))


class TopoLink(Struct, frozen=True):
    """One off-diagonal cell: row ``a``, column ``b``, the cell as printed (``NV18``, ``SYS``)."""

    a: str
    b: str
    kind: str


class Affinity(Struct, frozen=True):
    """A GPU row's affinity cells as printed (``N/A`` kept); None where the header lacks one."""

    cpu: str | None
    numa: str | None
    gpu_numa_id: str | None

    def to_fact(self) -> dict[str, object]:
        return {"cpu": self.cpu, "numa": self.numa, "gpu_numa_id": self.gpu_numa_id}


class TopoMatrix(Struct, frozen=True):
    """A parsed topology table: columns in header order, links in row-major printed order."""

    gpus: tuple[str, ...]
    nics: tuple[str, ...]
    nic_legend: dict[str, str]
    links: list[TopoLink]
    affinity: dict[str, Affinity]

    def to_fact(self) -> dict[str, object]:
        """The ``topo`` fact exactly as docs/facts.md shapes it."""
        return {
            "gpus": list(self.gpus),
            "nics": list(self.nics),
            "nic_legend": dict(self.nic_legend),
            "links": [{"a": link.a, "b": link.b, "kind": link.kind} for link in self.links],
            "affinity": {row: aff.to_fact() for row, aff in self.affinity.items()},
        }


class _Header(Struct, frozen=True):
    """The matrix's header: its columns, trailing affinity fields and where each starts."""

    line_number: int
    columns: tuple[str, ...]
    extras: tuple[str | None, ...]  # Affinity field per trailing header unit, None if unknown
    first_at: int  # where its first column starts (tabs expanded)
    extras_at: tuple[int, ...]  # where each trailing unit starts


class _Row(Struct, frozen=True):
    """One table row as tokens: its label, its cells, its trailing affinity cells and the line."""

    label: str
    cells: tuple[str, ...]
    extras: tuple[str, ...]
    line: str  # as printed (ANSI codes dropped): its layout is read only if a row needs it


class _Layout(Struct, frozen=True):
    """Where a row's cells sit: needed only to read a row that left an affinity cell empty."""

    first_at: int  # where its first cell starts (tabs expanded)
    extras_at: tuple[int, ...]  # where each affinity value starts
    tail: tuple[str, ...] | None  # the fields after its matrix cells, split at each tab


# --- public helpers -----------------------------------------------------------------------


def nvlink_count(kind: str) -> int | None:
    """Bonded NVLink count of an ``NV#`` kind (``NV18`` -> 18); None for any other kind."""
    match = _NVLINK.fullmatch(kind)
    return int(match.group(1)) if match else None


def is_pcie_kind(kind: str) -> bool:
    """True for the PCIe path kinds ``PIX``, ``PXB``, ``PHB``, ``NODE`` and ``SYS``."""
    return kind in _PCIE_KINDS


def gpu_pairs(matrix: TopoMatrix) -> dict[tuple[str, str], str]:
    """GPU-to-GPU cells keyed ``(row, column)``; both directions, as printed."""
    gpus = frozenset(matrix.gpus)
    return {(ln.a, ln.b): ln.kind for ln in matrix.links if ln.a in gpus and ln.b in gpus}


# --- parsing ------------------------------------------------------------------------------


def parse_topo(text: str) -> TopoMatrix:
    """Parse the first topology table in ``text``; raise TopoParseError if there is none."""
    lines = [_ANSI.sub("", line) for line in text.splitlines()]
    first_header: _Header | None = None
    for index, line in enumerate(lines):
        header = _parse_header(line, index + 1)
        if header is None:
            continue
        rows, end = _read_rows(lines, index + 1, header)
        if rows:
            return _build(header, rows, _read_nic_legend(lines, end))
        first_header = first_header or header
    if first_header is not None:
        message = "topology header is followed by no matrix rows"
        raise TopoParseError(message, first_header.line_number)
    raise TopoParseError(
        "no topology table: no header row of GPU columns", _first_content_line(lines)
    )


def _first_content_line(lines: Sequence[str]) -> int:
    return next((i + 1 for i, line in enumerate(lines) if line.strip()), 1)


def _segment(token: str) -> tuple[str, ...] | None:
    """The only way to read ``token`` as one or more cell words, or None (none or several)."""
    size = len(token)
    ways = [0] * (size + 1)  # ways[i]: readings of token[i:], capped at 2
    ways[size] = 1
    for start in range(size - 1, -1, -1):
        ways[start] = min(2, sum(ways[end] for end in _word_ends(token, start)))
    if ways[0] != 1:
        return None
    words: list[str] = []
    start = 0
    while start < size:
        end = next(end for end in _word_ends(token, start) if ways[end])
        words.append(token[start:end])
        start = end
    return tuple(words)


def _word_ends(token: str, start: int) -> Iterator[int]:
    for word in _FIXED_WORDS:
        if token.startswith(word, start):
            yield start + len(word)
    if token.startswith("NV", start):
        end = start + 2
        while end < len(token) and token[end] in _DIGITS:
            end += 1
            yield end


def _parse_header(line: str, line_number: int) -> _Header | None:
    """A header row: GPU0 first, then device names, then the affinity headers (if any). Its
    units are affinity headers or names (run-together ones split); read one by one, so that a
    line that is no header is given up at its first unit that cannot be one."""
    columns: list[str] = []
    seen: set[str] = set()
    extras: list[str | None] = []
    extras_at: list[int] = []
    first_at = 0
    for match in _HEADER_UNIT.finditer(line.expandtabs(_TAB)):
        unit, field = match.group(), match.lastgroup
        if field not in _AFFINITY_FIELDS:
            field = None
        if not columns:
            if not _GPU_NAME.fullmatch(unit):
                return None
            first_at = match.start()
        if field is not None or extras:  # the affinity headers, and what follows them
            extras.append(field)
            extras_at.append(match.start())
        elif unit in seen or _is_cell_or_value(unit):
            return None
        else:
            columns.append(unit)
            seen.add(unit)
    if not columns:
        return None
    return _Header(line_number, tuple(columns), tuple(extras), first_at, tuple(extras_at))


def _is_cell_or_value(token: str) -> bool:
    return _segment(token) is not None or _VALUE.fullmatch(token) is not None


def _read_rows(lines: Sequence[str], start: int, header: _Header) -> tuple[list[_Row], int]:
    """Rows below ``header`` up to the legend, another header or a repeated row label."""
    rows: list[_Row] = []
    seen: set[str] = set()
    index = start
    while index < len(lines) and not _ends_table(lines[index], index + 1):
        tokens = lines[index].split()
        index += 1
        if len(tokens) < 2 or tokens[0] not in header.columns or not _looks_like_row(tokens[1:]):
            continue  # blank, prose, MIG or other odd line inside the table: not a row
        if tokens[0] in seen:
            index -= 1  # a second table starts here
            break
        cells, extras = _split_row(tokens[1:], len(header.columns))
        rows.append(_Row(tokens[0], cells, extras, lines[index - 1]))
        seen.add(tokens[0])
    return rows, index


def _row_layout(row: _Row, columns: int) -> _Layout:
    """Where a row's first cell and affinity values start (tabs expanded), and the fields after
    its matrix cells, one per tab (empty where tabs run): split at its tabs, or, where a copy
    expanded them to spaces, rebuilt from the tab stops its values start at (None when neither
    can be told)."""
    words = list(_WORD.finditer(row.line.expandtabs(_TAB)))
    before, values = words[: len(words) - len(row.extras)], words[len(words) - len(row.extras) :]
    starts = tuple(value.start() for value in values)
    first_at = words[1].start()
    if "\t" in row.line:
        split = row.line.rstrip(" \r").split("\t")
        return _Layout(
            first_at, starts, tuple(split[1 + columns :]) if len(split) > columns else None
        )
    fields: list[str] = []
    end = before[-1].end() if before else 0
    for value in values:
        tabs = value.start() // _TAB - end // _TAB
        if value.start() % _TAB or tabs < 1:
            return _Layout(first_at, starts, None)
        fields.extend([""] * (tabs - 1) + [value.group()])
        end = value.end()
    return _Layout(first_at, starts, tuple(fields))


def _looks_like_row(cells: Sequence[str]) -> bool:
    """Matrix cells start with a link kind, or at least hold the diagonal ``X``."""
    if _segment(cells[0]) is not None:
        return True
    return any("X" in (_segment(cell) or ()) for cell in cells)


def _ends_table(line: str, line_number: int) -> bool:
    if line.strip().lower().startswith(("legend", "nic legend")):
        return True
    return _parse_header(line, line_number) is not None


def _split_row(tokens: Sequence[str], width: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``width`` matrix cells (run-together ones split), then the affinity values left over."""
    cells: list[str] = []
    index = 0
    while index < len(tokens) and len(cells) < width:
        token = tokens[index]
        words = _segment(token)
        if words is None and _VALUE.fullmatch(token):
            break  # a short row: the affinity values start here
        if words is not None and len(cells) + len(words) <= width:
            cells.extend(words)
        else:
            cells.append(token)
        index += 1
    return tuple(cells), tuple(tokens[index:])


def _read_nic_legend(lines: Sequence[str], start: int) -> dict[str, str]:
    """``NIC0: mlx5_0`` entries of the first ``NIC Legend:`` block after the table."""
    begin = next((i + 1 for i in range(start, len(lines)) if _is_nic_legend_title(lines[i])), None)
    legend: dict[str, str] = {}
    if begin is None:
        return legend
    for line in lines[begin:]:
        match = _NIC_LEGEND_ENTRY.fullmatch(line.strip())
        if match:
            legend[match.group(1)] = match.group(2)
        elif line.strip() or legend:
            break
    return legend


def _is_nic_legend_title(line: str) -> bool:
    return line.strip().lower().rstrip(":").strip() == "nic legend"


def _build(header: _Header, rows: Sequence[_Row], legend: dict[str, str]) -> TopoMatrix:
    gpus = tuple(c for c in header.columns if _GPU_NAME.fullmatch(c))
    nics = tuple(c for c in header.columns if not _GPU_NAME.fullmatch(c))
    links = [
        TopoLink(row.label, column, cell)
        for row in rows
        for column, cell in zip(header.columns, row.cells, strict=False)
        if column != row.label
    ]
    gpu_rows = [row for row in rows if _GPU_NAME.fullmatch(row.label)]
    width = len(header.extras)
    values: dict[str, tuple[str | None, ...]] = {row.label: row.extras for row in gpu_rows}
    if any(len(row.extras) < width for row in gpu_rows):  # a row left an affinity cell empty
        layouts = {row.label: _row_layout(row, len(header.columns)) for row in gpu_rows}
        full = [layouts[row.label] for row in gpu_rows if len(row.extras) == width]
        tabs = _tab_layout(full, width)
        starts = _start_layout(header, [layouts[row.label] for row in gpu_rows], full)
        for row in gpu_rows:
            values[row.label] = _placed(row, layouts[row.label], width, tabs, starts)
    affinity = {label: _affinity(header, placed) for label, placed in values.items()}
    return TopoMatrix(gpus, nics, legend, links, affinity)


def _affinity(header: _Header, values: Sequence[str | None]) -> Affinity:
    fields = {field: value for field, value in zip(header.extras, values, strict=False) if field}
    return Affinity(
        cpu=fields.get("cpu"), numa=fields.get("numa"), gpu_numa_id=fields.get("gpu_numa_id")
    )


_TabLayout = tuple[int, tuple[int, ...]]  # fields after the matrix cells, which hold the values


def _tab_layout(full: Sequence[_Layout], width: int) -> _TabLayout | None:
    """The tab fields the full GPU rows print their affinity values in, when they all agree."""
    layouts = set()
    for row in full:
        if row.tail is None:
            return None
        slots = tuple(i for i, field in enumerate(row.tail) if field.strip())
        if len(slots) != width:
            return None
        layouts.add((len(row.tail), slots))
    return layouts.pop() if len(layouts) == 1 else None


def _start_layout(
    header: _Header, rows: Sequence[_Layout], full: Sequence[_Layout]
) -> tuple[set[int], ...] | None:
    """Where each affinity column's values start in the full GPU rows, else where the header
    starts its units (when it sits where the rows do), else unknown."""
    if full:
        return tuple(set(column) for column in zip(*(row.extras_at for row in full), strict=True))
    if rows and abs(rows[0].first_at - header.first_at) <= 1:
        return tuple({at} for at in header.extras_at)
    return None


def _placed(
    row: _Row,
    layout: _Layout,
    width: int,
    tabs: _TabLayout | None,
    starts: tuple[set[int], ...] | None,
) -> tuple[str | None, ...]:
    """A row's affinity values by column; a column a short row leaves out is "" (an empty
    cell) where the layout places each value it does print, else None (not printed)."""
    if len(row.extras) >= width:
        return row.extras
    tail = layout.tail
    if tabs is not None and tail is not None and len(tail) == tabs[0]:
        values = tuple(tail[slot].strip() for slot in tabs[1])
        others = (f for i, f in enumerate(tail) if i not in tabs[1])
        if [v for v in values if v] == list(row.extras) and not any(f.strip() for f in others):
            return values
    if starts is None:
        return row.extras
    columns = [_column_at(at, starts) for at in layout.extras_at]
    if any(b <= a for a, b in pairwise(columns)):
        return row.extras  # the values do not fall in distinct columns, left to right
    placed: list[str | None] = [""] * width
    for column, value in zip(columns, row.extras, strict=True):
        placed[column] = value
    return tuple(placed)


def _column_at(at: int, starts: tuple[set[int], ...]) -> int:
    """The column a value starting at `at` is in: the one whose values start there, else the
    nearest."""
    exact = [column for column, seen in enumerate(starts) if at in seen]
    if len(exact) == 1:
        return exact[0]
    return min(range(len(starts)), key=lambda c: min(abs(s - at) for s in starts[c]))
