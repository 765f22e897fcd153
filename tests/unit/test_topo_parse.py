"""Unit tests for the pure ``nvidia-smi topo`` parser."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from sitscheck.checks.topology.parse import (
    Affinity,
    TopoLink,
    TopoMatrix,
    TopoParseError,
    gpu_pairs,
    is_pcie_kind,
    nvlink_count,
    parse_topo,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "topo"

LEGEND = (
    "\nLegend:\n\n"
    "  X    = Self\n"
    "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes"
    " (e.g., QPI/UPI)\n"
    "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges"
    " within a NUMA node\n"
    "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)\n"
    "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host"
    " Bridge)\n"
    "  PIX  = Connection traversing at most a single PCIe bridge\n"
    "  NV#  = Connection traversing a bonded set of # NVLinks\n"
)

P2P_LEGEND = """
Legend:

  X    = Self
  OK   = Status Ok
  CNS  = Chipset not supported
  GNS  = GPU not supported
  TNS  = Topology not supported
  NS   = Not supported
  DR   = Disabled by regkey
  U    = Unknown
"""


def _fixture(name: str) -> tuple[str, dict[str, object]]:
    text = (FIXTURES / f"{name}.txt").read_text()
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())
    return text, expected


def _kinds(matrix: TopoMatrix) -> dict[tuple[str, str], str]:
    return {(link.a, link.b): link.kind for link in matrix.links}


# --- live-form fixtures ---------------------------------------------------------------------


def test_h200x2_driver_580_fixture_matches_expected() -> None:
    text, expected = _fixture("h200x2-580-ansi")
    assert "\x1b[4m" in text and "\x1b[0m" in text  # the fixture really carries the codes
    matrix = parse_topo(text)
    assert matrix.to_fact() == expected
    assert matrix.gpus == ("GPU0", "GPU1")
    assert matrix.nics == ()
    assert matrix.links == [TopoLink("GPU0", "GPU1", "NV18"), TopoLink("GPU1", "GPU0", "NV18")]
    assert matrix.affinity["GPU1"] == Affinity(cpu="0-15", numa="0", gpu_numa_id="N/A")


def test_h100x8_nic_legend_fixture_matches_expected() -> None:
    text, expected = _fixture("h100x8-nic-legend")
    matrix = parse_topo(text)
    assert matrix.to_fact() == expected
    assert matrix.nics == tuple(f"NIC{i}" for i in range(8))
    assert matrix.nic_legend == {f"NIC{i}": f"mlx5_{i}" for i in range(8)}
    assert len(matrix.links) == 16 * 15
    kinds = _kinds(matrix)
    assert kinds["GPU5", "NIC5"] == "PXB"
    assert kinds["NIC5", "GPU4"] == "NODE"
    assert kinds["NIC0", "NIC7"] == "SYS"
    assert set(matrix.affinity) == {f"GPU{i}" for i in range(8)}  # NIC rows get no entry
    assert matrix.affinity["GPU4"] == Affinity("56-111,168-223", "1", "N/A")


# --- layout variants ------------------------------------------------------------------------


def test_ansi_header_reads_like_plain_header() -> None:
    plain = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \tNV4\t0-7\nGPU1\tNV4\t X \t0-7\n"
    ansi = plain.replace("\tGPU0", "\t\x1b[4mGPU0", 1).replace("Affinity\n", "Affinity\x1b[0m\n", 1)
    lost_esc = ansi.replace("\x1b", "")  # "[4m" left behind by a copy that dropped ESC
    expected = parse_topo(plain).to_fact()
    assert expected["links"] == [
        {"a": "GPU0", "b": "GPU1", "kind": "NV4"},
        {"a": "GPU1", "b": "GPU0", "kind": "NV4"},
    ]
    assert parse_topo(ansi).to_fact() == expected
    assert parse_topo(lost_esc).to_fact() == expected


def test_ansi_header_with_nic_rows_padded_by_empty_tabs() -> None:
    # Current drivers end NIC rows with one empty tab per affinity column.
    text = (
        "\t\x1b[4mGPU0\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
        "GPU0\t X \tPXB\t0-63,128-191\t0\t\tN/A\n"
        "NIC0\tPXB\t X \t\t\t\t\n" + LEGEND + "\nNIC Legend:\n\n  NIC0: mlx5_10\n"
    )
    fact = parse_topo(text).to_fact()
    assert fact == {
        "gpus": ["GPU0"],
        "nics": ["NIC0"],
        "nic_legend": {"NIC0": "mlx5_10"},
        "links": [
            {"a": "GPU0", "b": "NIC0", "kind": "PXB"},
            {"a": "NIC0", "b": "GPU0", "kind": "PXB"},
        ],
        "affinity": {"GPU0": {"cpu": "0-63,128-191", "numa": "0", "gpu_numa_id": "N/A"}},
    }


def test_space_aligned_table_and_multiword_headers() -> None:
    text = (
        "        GPU0    GPU1    mlx5_0  CPU Affinity    NUMA Affinity   GPU NUMA ID\n"
        "GPU0     X      SYS     PIX     0-7,16-23       0               N/A\n"
        "GPU1    SYS      X      SYS     8-15,24-31      1               N/A\n"
        "mlx5_0  PIX     SYS      X \n"
    )
    matrix = parse_topo(text)
    assert matrix.gpus == ("GPU0", "GPU1")
    assert matrix.nics == ("mlx5_0",)
    assert matrix.nic_legend == {}
    assert matrix.affinity == {
        "GPU0": Affinity("0-7,16-23", "0", "N/A"),
        "GPU1": Affinity("8-15,24-31", "1", "N/A"),
    }
    assert _kinds(matrix)["mlx5_0", "GPU0"] == "PIX"


def test_header_that_lost_its_indentation() -> None:
    text = (
        "GPU0    GPU1    CPU Affinity\n"
        "   GPU0     X      NV2     0-23\n"
        "   GPU1    NV2      X      0-23\n" + LEGEND
    )
    matrix = parse_topo(text)
    assert _kinds(matrix) == {("GPU0", "GPU1"): "NV2", ("GPU1", "GPU0"): "NV2"}
    assert matrix.affinity["GPU0"] == Affinity(cpu="0-23", numa=None, gpu_numa_id=None)


def test_runs_of_tabs_are_one_separator() -> None:
    text = "\tGPU0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \t0-7\t\tN/A\t\tN/A\n"
    matrix = parse_topo(text)
    assert matrix.links == []
    assert matrix.affinity == {"GPU0": Affinity(cpu="0-7", numa="N/A", gpu_numa_id="N/A")}


def test_crlf_line_endings() -> None:
    text = "\tGPU0\tGPU1\r\nGPU0\t X \tPHB\r\nGPU1\tPHB\t X \r\n"
    assert _kinds(parse_topo(text)) == {("GPU0", "GPU1"): "PHB", ("GPU1", "GPU0"): "PHB"}


def test_affinity_columns_the_table_lacks_are_none() -> None:
    text = "\tGPU0\tGPU1\nGPU0\t X \tSYS\nGPU1\tSYS\t X \n"
    matrix = parse_topo(text)
    assert matrix.affinity == {
        "GPU0": Affinity(None, None, None),
        "GPU1": Affinity(None, None, None),
    }


def test_unknown_trailing_header_column_is_ignored() -> None:
    text = "\tGPU0\tCPU Affinity\tExtra\tNUMA Affinity\nGPU0\t X \t0-3\tzz\t1\n"
    assert parse_topo(text).affinity["GPU0"] == Affinity("0-3", "1", None)


# --- p2p tables -----------------------------------------------------------------------------


def test_p2p_table_keeps_status_words() -> None:
    text = (
        " \tGPU0\tGPU1\tGPU2\tGPU3\t\n"
        " GPU0\tX\tOK\tCNS\tTNS\t\n"
        " GPU1\tOK\tX\tNS\tDR\t\n"
        " GPU2\tCNS\tNS\tX\tU\t\n"
        " GPU3\tTNS\tDR\tU\tX\t\n" + P2P_LEGEND
    )
    matrix = parse_topo(text)
    kinds = _kinds(matrix)
    assert len(kinds) == 12
    assert kinds["GPU0", "GPU1"] == "OK"
    assert kinds["GPU0", "GPU2"] == "CNS"
    assert kinds["GPU1", "GPU2"] == "NS"
    assert kinds["GPU1", "GPU3"] == "DR"
    assert kinds["GPU3", "GPU0"] == "TNS"
    assert kinds["GPU2", "GPU3"] == "U"
    assert matrix.nics == ()
    assert set(matrix.affinity.values()) == {Affinity(None, None, None)}


def test_p2p_gns_run_together() -> None:
    text = "        GPU0    GPU1    GPU2\nGPU0     X      GNSGNS\nGPU1    GNS      X      GNS\n"
    kinds = _kinds(parse_topo(text))
    assert kinds["GPU0", "GPU1"] == "GNS"
    assert kinds["GPU0", "GPU2"] == "GNS"


# --- run-together cells ---------------------------------------------------------------------


def test_merged_cells_split_where_only_one_split_exists() -> None:
    text = (
        "        GPU0    NIC0    NIC1    NIC2    CPU Affinity\n"
        "GPU0     X      NODENODE    PIX     0-55\n"
        "NIC0    NODE     X PIX      PIX\n"
        "NIC1    NODE    PIX X       NODE\n"
        "NIC2    PIXPIX  NODE X \n"
    )
    matrix = parse_topo(text)
    kinds = _kinds(matrix)
    assert [kinds["GPU0", n] for n in ("NIC0", "NIC1", "NIC2")] == ["NODE", "NODE", "PIX"]
    assert kinds["NIC0", "NIC1"] == "PIX"
    assert kinds["NIC1", "NIC2"] == "NODE"
    assert kinds["NIC2", "GPU0"] == "PIX" and kinds["NIC2", "NIC0"] == "PIX"
    assert kinds["NIC2", "NIC1"] == "NODE"
    assert len(matrix.links) == 12
    assert all(link.a != link.b for link in matrix.links)
    assert matrix.affinity["GPU0"].cpu == "0-55"


def test_nvlink_cells_run_together() -> None:
    text = "\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV12NV2\nGPU1\tNV12\t X \tNV2\n"
    kinds = _kinds(parse_topo(text))
    assert kinds["GPU0", "GPU1"] == "NV12"
    assert kinds["GPU0", "GPU2"] == "NV2"


def test_unsplittable_run_is_kept_as_printed() -> None:
    # "NODEC2C" has no reading as link kinds: it stays one cell, and the row is not shifted.
    text = "\tGPU0\tGPU1\tNIC0\tCPU Affinity\nGPU0\t X \tNODEC2C\tSYS\t0-3\n"
    matrix = parse_topo(text)
    assert _kinds(matrix) == {("GPU0", "GPU1"): "NODEC2C", ("GPU0", "NIC0"): "SYS"}
    assert matrix.affinity["GPU0"].cpu == "0-3"


def test_run_longer_than_the_row_has_room_for_is_not_split() -> None:
    text = "\tGPU0\tGPU1\nGPU0\t X \tSYSSYS\n"
    assert _kinds(parse_topo(text)) == {("GPU0", "GPU1"): "SYSSYS"}


# --- odd rows and surroundings --------------------------------------------------------------


def test_short_row_does_not_eat_affinity_values() -> None:
    text = "\tGPU0\tGPU1\tGPU2\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-7\t0\n"
    matrix = parse_topo(text)
    assert _kinds(matrix) == {("GPU0", "GPU1"): "NV4"}
    assert matrix.affinity["GPU0"] == Affinity(cpu="0-7", numa="0", gpu_numa_id=None)


def test_odd_lines_inside_the_table_are_skipped() -> None:
    text = (
        "NVIDIA Topology:\n"
        "\tGPU0\tGPU1\tCPU Affinity\n"
        "GPU0\t X \tNV12\t0-7\n"
        "GPU0 MIG 1g.10gb Device 0\n"
        "MIG-0\t X \tSYS\n"
        "\n"
        "GPU1\tNV12\t X \t0-7\n"
    )
    matrix = parse_topo(text)
    assert [(link.a, link.b) for link in matrix.links] == [("GPU0", "GPU1"), ("GPU1", "GPU0")]
    assert list(matrix.affinity) == ["GPU0", "GPU1"]


def test_unknown_first_cell_row_is_kept_when_it_holds_the_diagonal() -> None:
    text = "\tGPU0\tGPU1\nGPU0\t X \tC2C\nGPU1\tC2C\t X \n"
    assert _kinds(parse_topo(text)) == {("GPU0", "GPU1"): "C2C", ("GPU1", "GPU0"): "C2C"}


def test_only_the_first_table_is_read() -> None:
    first = "\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\t X \n"
    second = " \tGPU0\tGPU1\t\n GPU0\tX\tOK\t\n GPU1\tOK\tX\t\n"
    matrix = parse_topo(first + second + P2P_LEGEND)
    assert {link.kind for link in matrix.links} == {"NV4"}
    headerless_second = first + "GPU0\tX\tOK\n"  # a repeated row label ends the table too
    assert {link.kind for link in parse_topo(headerless_second).links} == {"NV4"}


def test_nic_legend_stops_at_trailing_text() -> None:
    text = (
        "\tGPU0\tNIC0\tNIC1\nGPU0\t X \tPIX\tSYS\nNIC0\tPIX\t X \tSYS\nNIC1\tSYS\tSYS\t X \n"
        + LEGEND
        + "\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_bond_0\n\n\nulimit soft: 1048576\n"
    )
    assert parse_topo(text).nic_legend == {"NIC0": "mlx5_0", "NIC1": "mlx5_bond_0"}


def test_cut_nic_legend_maps_only_what_was_printed() -> None:
    text = "\tGPU0\tNIC0\tNIC1\nGPU0\t X \tPIX\tSYS\n" + "\nNIC Legend:\n\n  NIC0: mlx5_0\n"
    matrix = parse_topo(text)
    assert matrix.nics == ("NIC0", "NIC1")
    assert matrix.nic_legend == {"NIC0": "mlx5_0"}


def test_table_after_preamble_and_legend_text_after() -> None:
    text = "$ nvidia-smi topo -m\nsome banner\n\n\tGPU0\tGPU1\nGPU0\t X \tSYS\nGPU1\tSYS\t X \n"
    assert len(parse_topo(text + LEGEND + "\ntrailing words GPU0 X\n").links) == 2


def test_old_soc_kind_is_a_link_kind_and_splits_when_run_together() -> None:
    # Drivers before 2017 named the SMP-link path SOC (later SYS).
    text = "\tGPU0\tGPU1\tGPU2\tCPU Affinity\nGPU0\t X \tSOCSOC\t0-7\nGPU1\tSOC\t X \tPIX\t8-15\n"
    kinds = _kinds(parse_topo(text))
    assert kinds["GPU0", "GPU1"] == kinds["GPU0", "GPU2"] == kinds["GPU1", "GPU0"] == "SOC"
    assert kinds["GPU1", "GPU2"] == "PIX"


def test_header_whose_names_and_affinity_units_ran_together() -> None:
    # A 570 driver's underlined header copied without its tabs (tests/corpus/topo/002).
    text = (
        "GPU0GPU1NIC0CPU AffinityNUMA AffinityGPU NUMA ID   \n"
        "GPU0     X     SYS    PHB    0-13,28-41    0        N/A\n"
        "GPU1    SYS     X     SYS    14-27,42-55    1        N/A\n"
        "NIC0    PHB    SYS     X \n"
    )
    matrix = parse_topo(text)
    assert (matrix.gpus, matrix.nics) == (("GPU0", "GPU1"), ("NIC0",))
    assert matrix.affinity["GPU1"] == Affinity("14-27,42-55", "1", "N/A")
    assert _kinds(matrix)["NIC0", "GPU1"] == "SYS"


# An affinity column that printed nothing: the recorded 2×H200 (driver 580) table and the 8×4090
# one of tests/corpus (topo/011, shared), each with the CPU Affinity of GPUs outside the
# container's cpuset left empty the way nvidia-smi prints an empty field (its tabs kept).
H200 = Path(__file__).resolve().parents[1] / "bundles/h200x2-idle-v1/nvidia-smi-topo-m.txt"


def _h200_without_gpu1_cpus() -> str:
    text = H200.read_text()
    assert "GPU1\tNV18\t X \t0-31\t0\t\tN/A" in text
    return text.replace("GPU1\tNV18\t X \t0-31\t0\t\tN/A", "GPU1\tNV18\t X \t\t0\t\tN/A")


@pytest.mark.parametrize("expand", [False, True], ids=["tabs", "tabs-expanded"])
def test_empty_affinity_cell_is_empty_not_a_shift(expand: bool) -> None:
    text = _h200_without_gpu1_cpus()
    matrix = parse_topo(text.expandtabs(8) if expand else text)
    assert matrix.affinity["GPU0"] == Affinity("0-31", "0", "N/A")
    assert matrix.affinity["GPU1"] == Affinity("", "0", "N/A")


@pytest.mark.parametrize("expand", [False, True], ids=["tabs", "tabs-expanded"])
def test_empty_affinity_cells_after_long_values(expand: bool) -> None:
    header = "\tGPU0\tGPU1\tGPU2\tGPU3\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    rows = [
        "GPU0\t X \tSYS\tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A",
        "GPU1\tSYS\t X \tSYS\tSYS\tSYS\t0-55,112-167\t0\t\tN/A",
        "GPU2\tSYS\tSYS\t X \tSYS\tPHB\t\t1\t\tN/A",
        "GPU3\tSYS\tSYS\tSYS\t X \tSYS\t\t1\t\tN/A",
        "NIC0\tSYS\tSYS\tPHB\tSYS\t X ",
    ]
    text = header + "\n".join(rows) + "\n"
    matrix = parse_topo(text.expandtabs(8) if expand else text)
    assert matrix.affinity["GPU1"] == Affinity("0-55,112-167", "0", "N/A")
    assert matrix.affinity["GPU2"] == matrix.affinity["GPU3"] == Affinity("", "1", "N/A")
    assert _kinds(matrix)["GPU2", "NIC0"] == "PHB"


def test_short_affinity_row_without_a_layout_to_read_it_by_is_left_as_printed() -> None:
    # no full GPU row, and a header that does not sit where the rows do (its indent lost)
    text = "GPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t0\n"
    assert parse_topo(text).affinity["GPU0"] == Affinity("0", None, None)


def test_run_together_header_names_are_split() -> None:
    text = "\tGPU0\tGPU1NIC0\tCPU Affinity\nGPU0\t X \tNV1\tPIX\t0-1\n"
    matrix = parse_topo(text)
    assert matrix.gpus == ("GPU0", "GPU1")
    assert matrix.nics == ("NIC0",)
    assert _kinds(matrix)["GPU0", "NIC0"] == "PIX"


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("", 1),
        ("\n\n   \n", 1),
        ("\n\nFailed to initialize NVML: Driver/library version mismatch\n", 3),
        ("NVIDIA-SMI has failed because it couldn't communicate with the driver.\n", 1),
        (LEGEND, 2),
    ],
)
def test_text_without_a_table_raises_naming_the_line(text: str, line: int) -> None:
    with pytest.raises(TopoParseError, match=rf"^line {line}: no topology table") as info:
        parse_topo(text)
    assert info.value.line_number == line


def test_header_without_rows_names_the_header_line() -> None:
    text = "Topology:\n\n\tGPU0\tGPU1\tCPU Affinity\n\nLegend:\n"
    with pytest.raises(TopoParseError) as info:
        parse_topo(text)
    assert info.value.line_number == 3
    assert "no matrix rows" in info.value.message
    assert str(info.value) == "line 3: topology header is followed by no matrix rows"


def test_parse_error_is_a_value_error_and_pickles() -> None:
    error = TopoParseError("no topology table", 7)
    assert isinstance(error, ValueError)
    clone = pickle.loads(pickle.dumps(error))
    assert (clone.message, clone.line_number, str(clone)) == ("no topology table", 7, str(error))


# --- helpers and value types ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "count"),
    [("NV18", 18), ("NV1", 1), ("NV12", 12), ("NV#", None), ("NV", None), ("PIX", None),
     ("SYS", None), ("X", None), ("NV18 ", None), ("xNV2", None)],
)  # fmt: skip
def test_nvlink_count(kind: str, count: int | None) -> None:
    assert nvlink_count(kind) == count


@pytest.mark.parametrize("kind", ["PIX", "PXB", "PHB", "NODE", "SYS", "SOC"])
def test_pcie_kinds(kind: str) -> None:
    assert is_pcie_kind(kind)


@pytest.mark.parametrize("kind", ["NV18", "X", "OK", "NS", "GNS", "pix", "", "N/A"])
def test_non_pcie_kinds(kind: str) -> None:
    assert not is_pcie_kind(kind)


def test_gpu_pairs_keeps_gpu_cells_only_in_both_directions() -> None:
    text, _ = _fixture("h100x8-nic-legend")
    pairs = gpu_pairs(parse_topo(text))
    assert len(pairs) == 8 * 7
    assert set(pairs.values()) == {"NV18"}
    assert ("GPU3", "GPU6") in pairs and ("GPU6", "GPU3") in pairs
    assert not any(a.startswith("NIC") or b.startswith("NIC") for a, b in pairs)


def test_gpu_pairs_keeps_asymmetric_cells_as_printed() -> None:
    text = "\tGPU0\tGPU1\tmlx5_0\nGPU0\t X \tNV2\tPIX\nGPU1\tSYS\t X \tPIX\n"
    assert gpu_pairs(parse_topo(text)) == {("GPU0", "GPU1"): "NV2", ("GPU1", "GPU0"): "SYS"}


def test_value_types_are_frozen() -> None:
    matrix = parse_topo("\tGPU0\tGPU1\nGPU0\t X \tSYS\nGPU1\tSYS\t X \n")
    with pytest.raises(AttributeError, match="immutable"):
        matrix.gpus = ()  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        matrix.links[0].kind = "NV4"  # type: ignore[misc]
