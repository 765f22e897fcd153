"""`--query-gpu=... --format=csv` (sitscheck.smi.query_csv)."""

from __future__ import annotations

import pytest
from sitscheck.smi.query_csv import (
    canonical_field,
    field_bitmask,
    field_bool,
    field_float,
    field_int,
    field_str,
    field_value,
    parse_query_csv,
    parse_query_csv_result,
)
from sitscheck.smi.values import SmiErrorKind, SmiParseError, ValueKind

WITH_UNITS = """\
index, power.draw [W], clocks.current.sm [MHz], fan.speed [%], clocks_throttle_reasons.active
0, 67.97 W, 1410 MHz, [N/A], 0x0000000000000004
1, 87.12 W, 1395 MHz, [N/A], 0x0000000000000000
"""

NO_UNITS = """\
index, power.draw [W], clocks.current.sm [MHz], fan.speed [%], clocks_throttle_reasons.active
0, 67.97, 1410, [N/A], 0x0000000000000004
1, 87.12, 1395, [N/A], 0x0000000000000000
"""


@pytest.mark.parametrize("text", [WITH_UNITS, NO_UNITS])
def test_units_come_from_the_header_or_the_value(text: str) -> None:
    result = parse_query_csv_result(text)
    assert result.fields == (
        "index",
        "power.draw",
        "clocks.current.sm",
        "fan.speed",
        "clocks_event_reasons.active",
    )
    assert result.units["power.draw"] == "W"
    assert result.units["index"] is None
    first, second = result.rows
    assert first["power.draw"].number == 67.97
    assert first["power.draw"].unit == "W"
    assert second["clocks.current.sm"].unit == "MHz"
    assert field_int(second, "clocks.current.sm") == 1395
    assert field_bitmask(first, "clocks_event_reasons.active") == 4
    assert first["fan.speed"].kind is ValueKind.NOT_SUPPORTED
    assert result.row_lines == (2, 3)


def test_noheader_needs_fields_and_reads_aliases() -> None:
    text = "0, 1410, 1593, [N/A]\n1, 1395, 1593, 31\n"
    with pytest.raises(SmiParseError) as caught:
        parse_query_csv(text)
    assert caught.value.line == 1
    rows = parse_query_csv(text, fields=["index", "clocks.sm", "clocks.mem", "temperature.memory"])
    assert [field_int(r, "clocks.current.sm") for r in rows] == [1410, 1395]
    assert [field_int(r, "clocks.current.memory") for r in rows] == [1593, 1593]
    assert rows[0]["temperature.memory"].kind is ValueKind.NOT_SUPPORTED
    assert field_int(rows[1], "temperature.memory") == 31


def test_fields_given_with_a_header_match_in_any_order() -> None:
    rows = parse_query_csv(
        "index, name\n0, NVIDIA H200\n", fields=["name", "index"]
    )  # the header is recognised, not read as a row
    assert rows == parse_query_csv("index, name\n0, NVIDIA H200\n")
    with pytest.raises(SmiParseError):
        parse_query_csv("index, pci.bus_id\n0, 00000000:03:00.0\n", fields=["index", "name"])
    with pytest.raises(SmiParseError):
        parse_query_csv("power.draw [W]\n67.97 W\n", fields=["temperature.gpu"])
    # a first row of lower-case words is data, not a header
    rows = parse_query_csv("gpu_burn, 11345\npython3, 7\n", fields=["process_name", "pid"])
    assert [field_str(r, "process_name") for r in rows] == ["gpu_burn", "python3"]


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("clocks_throttle_reasons.hw_slowdown", "clocks_event_reasons.hw_slowdown"),
        ("clocks_throttle_reasons.active", "clocks_event_reasons.active"),
        ("Clocks_Throttle_Reasons.sync_boost", "clocks_event_reasons.sync_boost"),
        ("clocks.gr", "clocks.current.graphics"),
        ("clocks.max.mem", "clocks.max.memory"),
        ("clocks.default_applications.gr", "clocks.default_applications.graphics"),
        ("retired_pages.sbe", "retired_pages.single_bit_ecc.count"),
        ("retired_pages.dbe", "retired_pages.double_bit.count"),
        ("inforom.image", "inforom.img"),
        ("gpu_operation_mode.current", "gom.current"),
        ("used_memory", "used_gpu_memory"),
        ("power.draw [W]", "power.draw"),
        ("pcie.link.gen.current", "pcie.link.gen.current"),  # still printed beside gpucurrent
        ("gpu_name", "gpu_name"),  # per-process queries keep their own names
    ],
)
def test_canonical_field(name: str, canonical: str) -> None:
    assert canonical_field(name) == canonical


@pytest.mark.parametrize(
    "header",
    [
        "clocks_throttle_reasons.hw_slowdown, clocks_event_reasons.hw_slowdown",
        "clocks_event_reasons.hw_slowdown, clocks_throttle_reasons.hw_slowdown",
    ],
)
def test_old_and_current_name_together_the_current_one_wins(header: str) -> None:
    values = {
        "clocks_throttle_reasons.hw_slowdown": "Active",
        "clocks_event_reasons.hw_slowdown": "Not Active",
    }
    cells = [values[n.strip()] for n in header.split(",")]
    result = parse_query_csv_result(f"{header}\n{', '.join(cells)}\n")
    assert result.fields == ("clocks_event_reasons.hw_slowdown",)
    (row,) = result.rows
    assert field_bool(row, "clocks_event_reasons.hw_slowdown") is False


@pytest.mark.parametrize(
    "text",
    [
        "index, index\n0, 1\n",
        "clocks.sm, clocks.sm\n1, 2\n",
    ],
)
def test_a_field_twice_is_refused(text: str) -> None:
    with pytest.raises(SmiParseError) as caught:
        parse_query_csv(text)
    assert caught.value.line == 1


def test_wrong_cell_count_names_its_line() -> None:
    with pytest.raises(SmiParseError) as caught:
        parse_query_csv("index, name\n0, A\n1, B, extra\n")
    assert caught.value.line == 3


def test_windows_crlf_bom_spaces_and_repeated_header() -> None:
    text = (
        "\ufeffindex, driver_model.current, persistence_mode\r\n"
        "0 ,  WDDM ,[N/A]\r\n"
        "index, driver_model.current, persistence_mode\r\n"
        "1, TCC, [N/A]\r\n"
    )
    rows = parse_query_csv(text)
    assert [field_str(r, "driver_model.current") for r in rows] == ["WDDM", "TCC"]
    assert [field_int(r, "index") for r in rows] == [0, 1]
    assert all(r["persistence_mode"].kind is ValueKind.NOT_SUPPORTED for r in rows)


def test_lost_gpu_line_between_rows() -> None:
    text = (
        "index, pci.bus_id, power.draw [W]\n"
        "0, 00000000:05:00.0, 43.33 W\n"
        "Unable to determine the device handle for GPU1: 0000:0A:00.0: GPU is lost.  "
        "Reboot the system to recover this GPU\n"
        "2, 00000000:0B:00.0, [GPU is lost]\n"
    )
    result = parse_query_csv_result(text)
    assert [field_int(r, "index") for r in result.rows] == [0, 2]
    (error,) = result.errors
    assert (error.kind, error.gpu_index, error.bus_id) == (SmiErrorKind.GPU_LOST, 1, "0000:0A:00.0")
    assert result.rows[1]["power.draw"].kind is ValueKind.LOST
    assert field_float(result.rows[1], "power.draw") is None
    assert len(parse_query_csv(text)) == 2


def test_noheader_query_with_no_rows_prints_nothing() -> None:
    assert parse_query_csv("", fields=["pid", "used_memory"]) == []
    result = parse_query_csv_result("\n", fields=["pid", "used_memory"])
    assert result.fields == ("pid", "used_gpu_memory")
    with pytest.raises(SmiParseError):
        parse_query_csv("", fields=["pid", "pid"])


def test_only_an_error_line() -> None:
    result = parse_query_csv_result("No devices were found\n")
    assert result.rows == () and result.fields == ()
    assert [e.kind for e in result.errors] == [SmiErrorKind.NO_DEVICES]


def test_na_policy_by_field() -> None:
    (row,) = parse_query_csv(
        "power.draw [W], temperature.gpu, temperature.memory, ecc.errors.corrected.volatile.total\n"
        "[N/A], N/A, N/A, [N/A]\n"
    )
    assert row["power.draw"].kind is ValueKind.NOT_AVAILABLE
    assert row["temperature.gpu"].kind is ValueKind.NOT_AVAILABLE
    assert row["temperature.memory"].kind is ValueKind.NOT_SUPPORTED
    assert row["ecc.errors.corrected.volatile.total"].kind is ValueKind.NOT_SUPPORTED


def test_field_helpers() -> None:
    (row,) = parse_query_csv(
        "name, fabric.cliqueId, power.draw [W], mig.mode.current\n"
        "NVIDIA H200, 0, 74.58 W, Disabled\n"
    )
    assert field_int(row, "FABRIC.CLIQUEID") == 0  # any case
    assert field_value(row, "fabric.cliqueid") is row["fabric.cliqueId"]
    assert field_bool(row, "mig.mode.current") is False
    assert field_str(row, "name") == "NVIDIA H200"
    with pytest.raises(KeyError):
        field_value(row, "temperature.gpu")  # not queried
    with pytest.raises(SmiParseError):
        field_int(row, "power.draw")  # 74.58 is not an integer
    with pytest.raises(SmiParseError):
        field_float(row, "name")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n \n",
        "67.97 W, 0 %, [N/A], 28\n",
        "GPU 0: NVIDIA H200 (UUID: GPU-1)\n",
        "==============NVSMI LOG==============\n",
    ],
)
def test_refused(text: str) -> None:
    with pytest.raises(SmiParseError):
        parse_query_csv(text)
