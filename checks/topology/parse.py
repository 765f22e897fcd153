"""Pure parser for ``nvidia-smi topo -m`` (also ``topo -mp`` and ``topo -p2p``) text.

The text is read as whitespace-separated tokens, so tab- and space-aligned tables, runs of
tabs (``\\t\\tN/A``), lost indentation and trailing blanks all read the same. ANSI escape
codes (current drivers underline the header row) are dropped first. The multi-word headers
``CPU Affinity``, ``NUMA Affinity`` and ``GPU NUMA ID`` are matched as units. Cells that a
too-narrow layout ran together (``NODENODE``, ``PIXPIX``) are split into link kinds where
exactly one split exists and the row has room for it.

No I/O here: the check hands in the text and gets a :class:`TopoMatrix` back.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

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
_NAME_PART = re.compile(r"(?:GPU|NIC|mlx5_)[0-9]+")
_NAME_RUN = re.compile(r"(?:(?:GPU|NIC|mlx5_)[0-9]+){2,}")
_VALUE = re.compile(r"N/A|[0-9][0-9,\-]*")
_NVLINK = re.compile(r"NV([0-9]+)")
_NIC_LEGEND_ENTRY = re.compile(r"(NIC[0-9]+)\s*:\s*(\S+)")
_DIGITS = frozenset("0123456789")

# Every word a topo matrix cell can hold, but NV# (handled apart): topo -m kinds, then p2p.
_FIXED_WORDS = (
    "X", "SYS", "NODE", "PHB", "PXB", "PIX",
    "OK", "NS", "CNS", "GNS", "TNS", "DR", "U",
)  # fmt: skip
_PCIE_KINDS = frozenset({"PIX", "PXB", "PHB", "NODE", "SYS"})

# Header units that are not device columns, and the Affinity field each one fills.
_AFFINITY_HEADERS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("gpu", "numa", "id"), "gpu_numa_id"),
    (("cpu", "affinity"), "cpu"),
    (("numa", "affinity"), "numa"),
)


class TopoParseError(ValueError):
    """Text that holds no topology table; ``line_number`` (1-based) names where."""

    def __init__(self, message: str, line_number: int) -> None:
        super().__init__(f"line {line_number}: {message}")
        self.message = message
        self.line_number = line_number

    def __reduce__(self) -> tuple[type[TopoParseError], tuple[str, int]]:
        return (type(self), (self.message, self.line_number))


@dataclass(frozen=True, slots=True)
class TopoLink:
    """One off-diagonal cell: row ``a``, column ``b``, the cell as printed (``NV18``, ``SYS``)."""

    a: str
    b: str
    kind: str


@dataclass(frozen=True, slots=True)
class Affinity:
    """A GPU row's affinity cells as printed (``N/A`` kept); None where the header lacks one."""

    cpu: str | None
    numa: str | None
    gpu_numa_id: str | None

    def to_fact(self) -> dict[str, object]:
        return {"cpu": self.cpu, "numa": self.numa, "gpu_numa_id": self.gpu_numa_id}


@dataclass(frozen=True, slots=True)
class TopoMatrix:
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


@dataclass(frozen=True, slots=True)
class _Header:
    line_number: int
    columns: tuple[str, ...]
    extras: tuple[str | None, ...]  # Affinity field per trailing header unit, None if unknown


@dataclass(frozen=True, slots=True)
class _Row:
    label: str
    cells: tuple[str, ...]
    extras: tuple[str, ...]


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


def _header_units(line: str) -> list[str]:
    """Whitespace tokens; affinity headers joined into units, run-together names split."""
    words = line.split()
    units: list[str] = []
    index = 0
    while index < len(words):
        phrase = _affinity_phrase(words, index)
        if phrase is not None:
            units.append(" ".join(words[index : index + len(phrase)]))
            index += len(phrase)
            continue
        word = words[index]
        units.extend(_NAME_PART.findall(word) if _NAME_RUN.fullmatch(word) else [word])
        index += 1
    return units


def _affinity_phrase(words: Sequence[str], index: int) -> tuple[str, ...] | None:
    for phrase, _field in _AFFINITY_HEADERS:
        window = tuple(word.lower() for word in words[index : index + len(phrase)])
        if window == phrase:
            return phrase
    return None


def _affinity_field(unit: str) -> str | None:
    key = tuple(unit.lower().split())
    return next((field for phrase, field in _AFFINITY_HEADERS if phrase == key), None)


def _parse_header(line: str, line_number: int) -> _Header | None:
    """A header row: GPU0 first, then device names, then the affinity headers (if any)."""
    units = _header_units(line)
    if not units or not _GPU_NAME.fullmatch(units[0]):
        return None
    split = next((i for i, unit in enumerate(units) if " " in unit), len(units))
    columns, trailing = units[:split], units[split:]
    if len(set(columns)) != len(columns) or any(_is_cell_or_value(c) for c in columns):
        return None
    extras = tuple(_affinity_field(unit) for unit in trailing)
    return _Header(line_number, tuple(columns), extras)


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
        rows.append(_Row(tokens[0], cells, extras))
        seen.add(tokens[0])
    return rows, index


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
    affinity = {row.label: _affinity(header, row) for row in rows if _GPU_NAME.fullmatch(row.label)}
    return TopoMatrix(gpus, nics, legend, links, affinity)


def _affinity(header: _Header, row: _Row) -> Affinity:
    pairs = zip(header.extras, row.extras, strict=False)
    values = {field: value for field, value in pairs if field}
    return Affinity(
        cpu=values.get("cpu"), numa=values.get("numa"), gpu_numa_id=values.get("gpu_numa_id")
    )
