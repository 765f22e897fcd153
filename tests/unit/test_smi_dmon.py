"""`nvidia-smi dmon` / `pmon` (sitscheck.smi.dmon)."""

from __future__ import annotations

import pytest
from sitscheck.smi.dmon import parse_dmon, parse_dmon_result
from sitscheck.smi.values import SmiErrorKind, SmiParseError, ValueKind


def test_repeated_header_with_other_columns_applies_to_the_rows_after_it() -> None:
    rows = parse_dmon(
        "# gpu    sm   mem   enc   dec\n"
        "# Idx     %     %     %     %\n"
        "    0     5     1     0     0\n"
        "# gpu   pwr  temp\n"
        "# Idx     W     C\n"
        "    0    71    40\n"
    )
    first, second = rows
    assert list(first.values) == ["sm", "mem", "enc", "dec"]
    assert list(second.values) == ["pwr", "temp"]
    assert second.values["pwr"].unit == "W"
    assert (first.line, second.line) == (3, 6)


def test_date_time_columns_and_multiple_gpus() -> None:
    rows = parse_dmon(
        "#Date       Time        gpu    pwr  gtemp\n"
        "#YYYYMMDD   HH:MM:SS    Idx      W      C\n"
        " 20240301   10:00:01      0     69     41\n"
        " 20240301   10:00:01      1    612     63\n"
    )
    assert [r.gpu for r in rows] == [0, 1]
    assert rows[1].values["Time"].as_text() == "10:00:01"
    assert rows[1].values["pwr"].as_int() == 612
    assert rows[0].values["Date"].unit is None  # "YYYYMMDD" is no unit


def test_comma_separated_format() -> None:
    rows = parse_dmon("#gpu, pwr, gtemp, mtemp\n#Idx, W, C, C\n 0, 66, 30, -\n")
    (row,) = rows
    assert row.values["pwr"].as_int() == 66
    assert row.values["mtemp"].kind is ValueKind.NOT_SUPPORTED


def test_dash_means_unsupported_in_dmon_and_no_sample_in_pmon() -> None:
    (dmon,) = parse_dmon("# gpu   pwr sbecc\n# Idx     W  errs\n    0     -     -\n")
    assert dmon.values["sbecc"].kind is ValueKind.NOT_SUPPORTED
    assert dmon.values["pwr"].kind is ValueKind.NOT_AVAILABLE
    (pmon,) = parse_dmon(
        "# gpu     pid  type    sm   mem  command\n"
        "# Idx       #   C/G     %     %  name\n"
        "    0       -     -     -     -  -\n"
    )
    assert pmon.is_process
    assert pmon.values["sm"].kind is ValueKind.NOT_AVAILABLE
    assert pmon.values["pid"].kind is ValueKind.NOT_AVAILABLE


def test_pmon_command_with_spaces() -> None:
    (row,) = parse_dmon(
        "# gpu     pid  type    sm   mem  command\n"
        "# Idx       #   C/G     %     %  name\n"
        "    1    4242     C    97    40  python train.py   \n"
    )
    assert row.gpu == 1
    assert row.values["command"].as_text() == "python train.py"
    assert row.values["pid"].as_int() == 4242


def test_markdown_escaped_hash_and_missing_units_line() -> None:
    (row,) = parse_dmon("\\# gpu   sm  mem\n    2   10   20\n")
    assert row.gpu == 2
    assert row.units == {"sm": "", "mem": ""}
    assert row.values["sm"].unit is None


def test_non_numeric_gpu_cell_keeps_its_text() -> None:
    (row,) = parse_dmon("# gpu   sm\n# Idx    %\n 00000000:3B:00.0   10\n")
    assert row.gpu is None
    assert row.gpu_id == "00000000:3B:00.0"


def test_error_line_is_kept() -> None:
    result = parse_dmon_result(
        "# gpu   sm\n# Idx    %\n    0   10\n"
        "Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error\n"
    )
    assert len(result.rows) == 1
    assert [e.kind for e in result.errors] == [SmiErrorKind.DEVICE_HANDLE]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("", None),
        ("    0    69    41\n", 1),
        ("# gpu   pwr\n# Idx    W   C\n", 2),
        ("# gpu   pwr\n# Idx    W\n    0   69   41\n", 3),
        ("# pwr  temp\n# W  C\n", 1),
        ("# gpu  sm  sm\n", 1),
        ("# Idx      W\n", 1),
        ("GPU 0: NVIDIA H200 (UUID: GPU-1)\n", 1),
    ],
)
def test_refused(text: str, line: int | None) -> None:
    with pytest.raises(SmiParseError) as caught:
        parse_dmon(text)
    assert caught.value.line == line
