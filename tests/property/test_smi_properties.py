"""Properties of the smi parsers: no input makes any of them fail with anything but their own
`SmiParseError` (with a line inside the text, when it names one); CSV column order never changes
the rows; a rendered -q tree reads back as the same tree."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sitscheck.smi.dmon import parse_dmon_result
from sitscheck.smi.list_gpus import parse_list_gpus
from sitscheck.smi.query_csv import parse_query_csv, parse_query_csv_result
from sitscheck.smi.query_q import QNode, parse_query_q
from sitscheck.smi.values import SmiParseError, Value, decode, normalize_text

PARSERS: dict[str, Callable[[str], object]] = {
    "list_gpus": parse_list_gpus,
    "query_csv": parse_query_csv_result,
    "dmon": parse_dmon_result,
    "query_q": parse_query_q,
}

# Real lines of every kind, so generated documents reach deep into each parser.
FRAGMENTS = [
    "==============NVSMI LOG==============",
    "Timestamp                                 : Wed Sep 25 10:40:24 2024",
    "Driver Version                            : 535.129.03",
    "Attached GPUs                             : 8",
    "GPU 00000000:07:00.0",
    "GPU 0000:01:00.0",
    "    Product Name                          : NVIDIA A10",
    "    Clocks Event Reasons",
    "    Clocks Throttle Reasons               : N/A",
    "        HW Slowdown                       : Not Active",
    "            HW Thermal Slowdown           : Active",
    "    PCI",
    "        GPU Link Info",
    "            Link Width",
    "                Max                       : 16x",
    "    ECC Errors",
    "        Volatile",
    "            Single Bit",
    "                Total                     : 5",
    "            SRAM Uncorrectable Parity     : N/A",
    "            DRAM Uncorrectable            : GPU is lost",
    "    Remapped Rows                         : N/A",
    "    GPU Power Readings",
    "        Average Power Draw                : 629.45 W",
    "    Processes",
    "        GPU instance ID                   : N/A",
    "        Process ID                        : 11327",
    "            Used GPU Memory               : 2566 MiB",
    "    Temperature",
    "        Gpu                               : 29 C",
    "index, power.draw [W], clocks_throttle_reasons.active, fan.speed [%]",
    "0, 67.97 W, 0x0000000000000004, [N/A]",
    "1, [GPU is lost], [Unknown Error], ",
    "timestamp, gpu_name, pid, used_gpu_memory [MiB]",
    "# gpu    pwr  gtemp  mtemp     sm    mem",
    "# Idx      W      C      C      %      %",
    "    0     69     41     47      0      -",
    "# gpu         pid   type     sm    command",
    "# Idx           #    C/G      %    name",
    "    0      11327     C      -    memhog  x",
    "#Date       Time        gpu    pwr",
    "GPU 0: NVIDIA H200 (UUID: GPU-cb3dfa52-e2f3-9ca4-a399-7d16041c3732)",
    "  MIG 3g.71gb     Device  0: (UUID: MIG-0929581a-2be6-5dec-bf34-0954c6c529a6)",
    "GPU 1: Tesla M2090 (S/N: 0320111113512)",
    "Unable to determine the device handle for GPU3: 0000:5F:00.0: Unknown Error",
    "Unable to determine the device handle for gpu 0000:08:00.0: GPU is lost.  Reboot",
    "No devices were found",
    "Failed to initialize NVML: Driver/library version mismatch",
    "NVML library version: 550.54",
    "root@node:~# nvidia-smi -q",
    "| NVIDIA-SMI 550.90.07              Driver Version: 550.90.07      CUDA Version: 12.4 |",
    "",
]
_TOKEN = st.sampled_from([*"aZ09 :,#[]-.x%/()_\t\r\n=|+\ufeff²٣", "N/A", "0x", "GPU ", "  "])


def _noise(max_size: int) -> st.SearchStrategy[str]:
    return st.lists(_TOKEN, max_size=max_size).map("".join)


def _mutate(line: str, indent: int, cut: int, noise: str) -> str:
    return " " * indent + line[: max(0, len(line) - cut)] + noise


_LINE = st.builds(
    _mutate,
    st.sampled_from(FRAGMENTS),
    st.integers(0, 18),
    st.integers(0, 12),
    _noise(4),
)
_DOCUMENT = st.lists(st.one_of(_LINE, _noise(30)), max_size=30).map("\n".join)


def _check(parse: Callable[[str], object], text: str) -> None:
    try:
        parse(text)
    except SmiParseError as error:
        if error.line is not None:
            assert 1 <= error.line <= len(normalize_text(text))


@pytest.mark.parametrize("name", sorted(PARSERS))
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text())
def test_any_text_parses_or_raises_smi_parse_error(name: str, text: str) -> None:
    _check(PARSERS[name], text)


@pytest.mark.parametrize("name", sorted(PARSERS))
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(text=_DOCUMENT)
def test_mangled_real_lines_parse_or_raise_smi_parse_error(name: str, text: str) -> None:
    _check(PARSERS[name], text)


def _read_all(value: Value) -> None:
    for reader in (Value.as_float, Value.as_int, Value.as_bitmask, Value.as_text, Value.as_bool):
        try:
            reader(value)
        except SmiParseError:
            pass


@given(raw=st.one_of(st.text(), _noise(12)))
def test_decode_never_fails_and_missing_has_no_number(raw: str) -> None:
    value = decode(raw)
    assert value.raw == raw.strip()
    if value.is_missing:
        assert value.number is None
        assert value.as_float() is None
    _read_all(value)


# --- CSV column order --------------------------------------------------------------------------

_HEADER_POOL = [
    "index",
    "name",
    "pci.bus_id",
    "uuid",
    "power.draw [W]",
    "temperature.gpu",
    "temperature.memory",
    "fan.speed [%]",
    "clocks_throttle_reasons.active",
    "clocks.sm [MHz]",
    "memory.used [MiB]",
    "utilization.gpu [%]",
    "ecc.errors.uncorrected.volatile.total",
    "persistence_mode",
    "pcie.link.width.current",
    "retired_pages.sbe",
]
_CELL = st.one_of(
    st.sampled_from(
        [
            "[N/A]",
            "N/A",
            "[Not Supported]",
            "[Unknown Error]",
            "[GPU is lost]",
            "[Requested functionality has been deprecated]",
            "Enabled",
            "Not Active",
            "0x0000000000000004",
            "",
            "P0",
            "NVIDIA H200",
            "00000000:3B:00.0",
        ]
    ),
    st.integers(-5, 10**6).map(str),
    st.floats(0, 2000, allow_nan=False).map(lambda x: f"{x:.2f} W"),
    st.text(st.sampled_from(list("aZ09 .-%_/")), max_size=8),
)


@st.composite
def _table(draw: st.DrawFn) -> tuple[list[str], list[list[str]], list[int]]:
    header = draw(st.lists(st.sampled_from(_HEADER_POOL), min_size=1, unique=True))
    rows = draw(st.lists(st.lists(_CELL, min_size=len(header), max_size=len(header)), max_size=6))
    order = draw(st.permutations(range(len(header))))
    return header, rows, list(order)


def _render(header: list[str], rows: list[list[str]], order: list[int], with_header: bool) -> str:
    lines = [", ".join(header[i] for i in order)] if with_header else []
    lines += [", ".join(row[i] for i in order) for row in rows]
    return "\n".join(lines) + "\n"


@settings(max_examples=300)
@given(table=_table())
def test_csv_column_order_never_changes_the_rows(
    table: tuple[list[str], list[list[str]], list[int]],
) -> None:
    header, rows, order = table
    identity = list(range(len(header)))
    outcomes = []
    for columns in (identity, order):
        try:
            outcomes.append(parse_query_csv(_render(header, rows, columns, True)))
        except SmiParseError as error:
            outcomes.append([{"error": decode(error.message)}])
    assert outcomes[0] == outcomes[1]
    # a one-column row printed as nothing is a blank line, which is skipped
    assert len(outcomes[0]) == len([r for r in rows if ", ".join(r).strip()])


@settings(max_examples=200)
@given(table=_table())
def test_csv_noheader_with_fields_matches_the_headed_rows(
    table: tuple[list[str], list[list[str]], list[int]],
) -> None:
    header, rows, order = table
    if not rows:
        return
    headed = parse_query_csv(_render(header, rows, order, True))
    fields = [header[i].split(" [")[0] for i in order]
    bare = parse_query_csv(_render(header, rows, order, False), fields=fields)
    assert [{k: (v.kind, v.number, v.raw) for k, v in r.items()} for r in bare] == [
        {k: (v.kind, v.number, v.raw) for k, v in r.items()} for r in headed
    ]


# --- -q tree round trip --------------------------------------------------------------------------

_WORD = st.text(st.sampled_from(list("ABCXYZabcxyz019")), min_size=1, max_size=6)
_LABEL_TEXT = st.lists(_WORD, min_size=1, max_size=3).map(" ".join)
_VALUE_TEXT = st.one_of(
    st.sampled_from(["N/A", "16x", "629.45 W", "Not Active", "0x1F", "GPU is lost", "a : b"]),
    _WORD,
)

Tree = tuple[str, "str | None", tuple["Tree", ...]]


def _trees(depth: int) -> st.SearchStrategy[Tree]:
    leaf = st.tuples(_LABEL_TEXT, _VALUE_TEXT, st.just(()))
    if depth == 0:
        return leaf
    children = st.lists(_trees(depth - 1), min_size=1, max_size=3).map(tuple)
    section = st.tuples(_LABEL_TEXT, st.one_of(st.none(), _VALUE_TEXT), children)
    return st.one_of(leaf, section)


def _render_tree(node: Tree, depth: int, out: list[str]) -> None:
    label, value, children = node
    pad = "    " * depth
    out.append(pad + (label if value is None else f"{label.ljust(30)} : {value}"))
    for child in children:
        _render_tree(child, depth + 1, out)


def _shape(node: QNode) -> tuple[object, ...]:
    return (node.label, node.value, tuple(_shape(c) for c in node.children))


@settings(max_examples=200)
@given(children=st.lists(_trees(3), min_size=1, max_size=4))
def test_q_tree_reads_back_as_rendered(children: list[Tree]) -> None:
    lines = ["GPU 00000000:3B:00.0"]
    for child in children:
        _render_tree(child, 1, lines)
    (gpu,) = parse_query_q("\n".join(lines)).gpus
    assert gpu.bus_id == "00000000:3B:00.0"
    assert tuple(_shape(c) for c in gpu.tree.children) == tuple(children)
