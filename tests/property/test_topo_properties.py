"""Properties of the topo parser: layout never changes the facts; nothing else escapes it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st
from sitscheck.checks.topology.parse import TopoParseError, parse_topo

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "topo"

TOPO_KINDS = ("X", "SYS", "NODE", "PHB", "PXB", "PIX", "NV1", "NV2", "NV4", "NV12", "NV18")
P2P_KINDS = ("OK", "NS", "CNS", "GNS", "TNS", "DR", "U")
AFFINITY_HEADERS = {"cpu": "CPU Affinity", "numa": "NUMA Affinity", "gpu_numa_id": "GPU NUMA ID"}
AFFINITY_LAYOUTS = ((), ("cpu",), ("cpu", "numa"), ("cpu", "numa", "gpu_numa_id"))
LEGEND = (
    "\nLegend:\n\n  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
)


@dataclass(frozen=True)
class Model:
    """A topology as facts; rendered below into text in many layouts."""

    gpus: list[str]
    nics: list[str]
    kinds: dict[tuple[str, str], str]
    columns: tuple[str, ...]  # affinity fields the header prints, in print order
    values: dict[str, dict[str, str]]  # GPU -> field -> value
    nic_legend: dict[str, str]

    @property
    def names(self) -> list[str]:
        return self.gpus + self.nics

    def fact(self) -> dict[str, object]:
        return {
            "gpus": self.gpus,
            "nics": self.nics,
            "nic_legend": self.nic_legend,
            "links": [
                {"a": a, "b": b, "kind": self.kinds[a, b]}
                for a in self.names
                for b in self.names
                if a != b
            ],
            "affinity": {
                gpu: {field: self.values[gpu].get(field) for field in AFFINITY_HEADERS}
                for gpu in self.gpus
            },
        }


@dataclass(frozen=True)
class Style:
    tabs: bool
    ansi: bool
    legend: bool
    trailing: str
    indent_lost: bool
    pad: tuple[bool, ...]  # extra tab after an affinity value (nvidia-smi's short-field pad)
    width: int


CPU_LIST = r"N/A|[0-9]{1,3}(-[0-9]{1,3})?(,[0-9]{1,3}-[0-9]{1,3}){0,2}"
range_text = st.from_regex(CPU_LIST, fullmatch=True)
numa_text = st.from_regex(r"N/A|[0-9]{1,2}", fullmatch=True)


@st.composite
def models(draw: st.DrawFn, kinds: tuple[str, ...] = (*TOPO_KINDS, "C2C")) -> Model:
    p2p = draw(st.booleans())
    gpus = [f"GPU{i}" for i in range(draw(st.integers(1, 5)))]
    nic_style = draw(st.sampled_from(["NIC", "mlx5_"]))
    nics = [] if p2p else [f"{nic_style}{i}" for i in range(draw(st.integers(0, 3)))]
    names = gpus + nics
    alphabet = P2P_KINDS if p2p else kinds
    cells = {(a, b): draw(st.sampled_from(alphabet)) for a in names for b in names if a != b}
    columns = () if p2p else draw(st.sampled_from(AFFINITY_LAYOUTS))
    fields = {"cpu": range_text, "numa": numa_text, "gpu_numa_id": numa_text}
    values = {gpu: {f: draw(fields[f]) for f in columns} for gpu in gpus}
    named = nic_style == "NIC" and draw(st.booleans())
    legend = {nic: f"mlx5_{i}" for i, nic in enumerate(nics)} if named else {}
    return Model(gpus, nics, cells, columns, values, legend)


styles = st.builds(
    Style,
    tabs=st.booleans(),
    ansi=st.booleans(),
    legend=st.booleans(),
    trailing=st.sampled_from(["", " ", "\t", "  \t ", "\t\t"]),
    indent_lost=st.booleans(),
    pad=st.lists(st.booleans(), min_size=3, max_size=3).map(tuple),
    width=st.integers(0, 6),
)


def _matrix_cells(model: Model, row: str) -> list[str]:
    return [" X " if row == col else model.kinds[row, col] for col in model.names]


def _affinity_cells(model: Model, row: str, style: Style) -> list[str]:
    if row not in model.values:
        return [""] * len(model.columns) if style.tabs and style.pad[0] else []
    cells = [model.values[row][field] for field in model.columns]
    pads = ["\t" if style.tabs and pad else "" for pad in style.pad]
    return [cell + pad for cell, pad in zip(cells, pads, strict=False)]


def _join(cells: list[str], style: Style) -> str:
    if style.tabs:
        return "\t".join(cells)
    width = 8 + style.width
    return "".join(cell.ljust(max(width, len(cell) + 1)) for cell in cells)


def render(model: Model, style: Style, rows: dict[str, list[str]] | None = None) -> str:
    """The model as nvidia-smi (or a copy of its output) might lay it out."""
    header_cells = model.names + [AFFINITY_HEADERS[f] for f in model.columns]
    header = _join(header_cells, style)
    if style.ansi:
        header = f"\x1b[4m{header}\x1b[0m"
    lead = "" if style.indent_lost else ("\t" if style.tabs else " " * (8 + style.width))
    lines = [lead + header]
    for row in model.names:
        matrix = rows[row] if rows else _matrix_cells(model, row)
        lines.append(_join([row, *matrix, *_affinity_cells(model, row, style)], style))
    text = "".join(line + style.trailing + "\n" for line in lines)
    if style.legend:
        text += LEGEND
    if model.nic_legend:
        text += "\nNIC Legend:\n\n" + "".join(f"  {k}: {v}\n" for k, v in model.nic_legend.items())
    return text + style.trailing + "\n\n"


@given(models(), styles)
def test_layout_never_changes_the_facts(model: Model, style: Style) -> None:
    assert parse_topo(render(model, style)).to_fact() == model.fact()


@given(models(kinds=TOPO_KINDS), styles, st.data())
def test_run_together_cells_never_change_the_facts(
    model: Model, style: Style, data: st.DataObject
) -> None:
    rows = {row: _matrix_cells(model, row) for row in model.names}
    width = len(model.names)
    for row in data.draw(st.lists(st.sampled_from(model.names), max_size=4, unique=True)):
        if width < 2:
            break
        at = data.draw(st.integers(0, width - 2))
        cells = [cell.strip() for cell in rows[row]]
        rows[row] = [*cells[:at], cells[at] + cells[at + 1], *cells[at + 2 :]]
    assert parse_topo(render(model, style, rows)).to_fact() == model.fact()


def _parse_or_error(text: str) -> None:
    try:
        parse_topo(text)
    except TopoParseError as error:
        assert error.line_number >= 1
        assert str(error).startswith(f"line {error.line_number}: ")


@given(st.text())
@example("")
@example("GPU0")
@example("\tGPU0\nGPU0\t X \tGPU0\n")
@example("GPU0 NV" + "9" * 5000)
def test_arbitrary_text_only_raises_topo_parse_error(text: str) -> None:
    _parse_or_error(text)


TOKENS = (
    "GPU0", "GPU1", "GPU2", "NIC0", "NIC1", "mlx5_0", "X", " X ", "NV18", "NV", "SYS", "PIX",
    "NODENODE", "PIXX", "OK", "GNS", "CPU", "Affinity", "NUMA", "GPU", "ID", "N/A", "0-7",
    "0,2-5", "Legend:", "NIC Legend:", "NIC0:", "\x1b[4m", "\x1b[0m", "[4m", "\x1b", "", "-",
)  # fmt: skip
lines_of_tokens = st.lists(
    st.lists(st.sampled_from(TOKENS), max_size=12).flatmap(
        lambda words: st.sampled_from(["\t", " ", "  ", "\t\t", ""]).map(lambda s: s.join(words))
    ),
    max_size=12,
)


@given(lines_of_tokens, st.sampled_from(["\n", "\r\n"]))
def test_token_soup_only_raises_topo_parse_error(lines: list[str], newline: str) -> None:
    _parse_or_error(newline.join(lines))


@given(
    st.sampled_from(sorted(FIXTURES.glob("*.txt"))),
    st.lists(st.tuples(st.integers(0, 60), st.integers(0, 60), st.booleans()), max_size=5),
)
def test_damaged_real_output_only_raises_topo_parse_error(
    path: Path, edits: list[tuple[int, int, bool]]
) -> None:
    lines = path.read_text().splitlines(keepends=True)
    for start, stop, duplicate in edits:
        low, high = min(start, stop), max(start, stop)
        middle = lines[low:high] * 2 if duplicate else []
        lines = lines[:low] + middle + lines[high:]
    _parse_or_error("".join(lines))
