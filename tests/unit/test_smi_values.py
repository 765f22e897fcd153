"""Value decoding and the tool's error lines (sitscheck.smi.values)."""

from __future__ import annotations

import pytest
from sitscheck.smi.values import (
    SmiErrorKind,
    SmiParseError,
    Value,
    ValueKind,
    absent,
    classify_message,
    decode,
    is_command_echo,
    is_message_continuation,
    normalize_text,
)


@pytest.mark.parametrize(
    ("raw", "kind", "number", "unit"),
    [
        ("65 W", ValueKind.NUMBER, 65, "W"),
        ("631.95 W", ValueKind.NUMBER, 631.95, "W"),
        ("1980 MHz", ValueKind.NUMBER, 1980, "MHz"),
        ("81559 MiB", ValueKind.NUMBER, 81559, "MiB"),
        ("31 C", ValueKind.NUMBER, 31, "C"),
        ("-8 C", ValueKind.NUMBER, -8, "C"),
        ("12 %", ValueKind.NUMBER, 12, "%"),
        ("100.00%", ValueKind.NUMBER, 100.0, "%"),
        ("16x", ValueKind.NUMBER, 16, "x"),
        ("192 bank(s)", ValueKind.NUMBER, 192, "bank(s)"),
        ("3092 KB/s", ValueKind.NUMBER, 3092, "KB/s"),
        ("662.500 mV", ValueKind.NUMBER, 662.5, "mV"),
        ("0 us", ValueKind.NUMBER, 0, "us"),
        ("  42  ", ValueKind.NUMBER, 42, None),
        ("0x0000000000000004", ValueKind.HEX, 4, None),
        ("0x00000000000001FF", ValueKind.HEX, 0x1FF, None),
        ("0xd52bae2e458244e2", ValueKind.HEX, 0xD52BAE2E458244E2, None),
        ("Enabled", ValueKind.TEXT, None, None),
        ("96.00.A5.00.01", ValueKind.TEXT, None, None),
        ("3g.71gb", ValueKind.TEXT, None, None),  # not 3 with a unit "g.71gb"
        ("1e5", ValueKind.TEXT, None, None),
        ("12 apples", ValueKind.TEXT, None, None),
        ("1" * 41, ValueKind.TEXT, None, None),  # no int() of unbounded digit strings
        ("", ValueKind.EMPTY, None, None),
        ("   ", ValueKind.EMPTY, None, None),
        ("[Not Supported]", ValueKind.NOT_SUPPORTED, None, None),
        ("Not Supported", ValueKind.NOT_SUPPORTED, None, None),
        ("[Requested functionality has been deprecated]", ValueKind.NOT_SUPPORTED, None, None),
        ("Requested functionality has been deprecated", ValueKind.NOT_SUPPORTED, None, None),
        ("N/A", ValueKind.NOT_AVAILABLE, None, None),
        ("[N/A]", ValueKind.NOT_AVAILABLE, None, None),
        ("[Unknown Error]", ValueKind.ERROR, None, None),
        ("Unknown Error", ValueKind.ERROR, None, None),
        ("[Insufficient Permissions]", ValueKind.NOT_AVAILABLE, None, None),
        ("[GPU requires reset]", ValueKind.ERROR, None, None),
        ("[Some Future Error]", ValueKind.ERROR, None, None),
        ("[GPU is lost]", ValueKind.LOST, None, None),
        ("GPU is lost", ValueKind.LOST, None, None),
    ],
)
def test_decode(raw: str, kind: ValueKind, number: float | None, unit: str | None) -> None:
    value = decode(raw)
    assert value.kind is kind
    assert value.number == number
    assert value.unit == unit
    assert value.raw == raw.strip()


def test_integers_stay_int_and_decimals_float() -> None:
    assert isinstance(decode("700").number, int)
    assert isinstance(decode("700.00 W").number, float)


def test_na_means_what_the_caller_says() -> None:
    assert decode("N/A", na=ValueKind.NOT_SUPPORTED).kind is ValueKind.NOT_SUPPORTED
    assert decode("[N/A]", na=ValueKind.NOT_SUPPORTED).kind is ValueKind.NOT_SUPPORTED
    # the choice never turns an error or a lost GPU into "unsupported"
    assert decode("[Unknown Error]", na=ValueKind.NOT_SUPPORTED).kind is ValueKind.ERROR
    assert decode("[GPU is lost]", na=ValueKind.NOT_SUPPORTED).kind is ValueKind.LOST


def test_unit_hint_only_fills_a_bare_number() -> None:
    assert decode("631.95", unit="W").unit == "W"
    assert decode("631.95 W", unit="mW").unit == "W"
    assert decode("Enabled", unit="W").unit is None
    assert decode("[N/A]", unit="W").unit is None


def test_missing_and_fault_flags() -> None:
    for raw in ("N/A", "[Not Supported]", "", "[Unknown Error]", "[GPU is lost]"):
        assert decode(raw).is_missing, raw
    assert absent().is_missing and absent().kind is ValueKind.ABSENT
    assert decode("[Unknown Error]").is_fault and decode("[GPU is lost]").is_fault
    assert not decode("[N/A]").is_fault and not decode("[Not Supported]").is_fault
    assert not decode("0").is_missing


def test_missing_values_carry_no_number() -> None:
    for raw in ("N/A", "[Not Supported]", "[GPU is lost]", ""):
        value = decode(raw)
        assert value.number is None
        assert value.as_float() is None
        assert value.as_int() is None
        assert value.as_bitmask() is None
        assert value.as_text() is None
        assert value.as_bool() is None


def test_readers() -> None:
    assert decode("700.00 W").as_int() == 700
    assert decode("43.89 W").as_float() == 43.89
    assert decode("0x0000000000000004").as_bitmask() == 4
    assert decode("0x10").as_int() == 16
    assert decode("5").as_bitmask() == 5
    assert decode("P0").as_text() == "P0"
    assert decode("Not Active").as_bool() is False
    assert decode("Active").as_bool() is True
    assert decode("Supported").as_bool() is True
    assert decode("No").as_bool() is False


@pytest.mark.parametrize(
    ("value", "reader"),
    [
        (decode("43.89 W"), Value.as_int),
        (decode("Enabled"), Value.as_float),
        (decode("Enabled"), Value.as_int),
        (decode("-1"), Value.as_bitmask),
        (decode("1.5"), Value.as_bitmask),
        (decode("P0"), Value.as_bool),
        (decode("None"), Value.as_bool),
    ],
)
def test_readers_refuse_the_wrong_type(value: Value, reader: object) -> None:
    assert callable(reader)
    with pytest.raises(SmiParseError):
        reader(value)


def test_normalize_text_undoes_paste_damage() -> None:
    assert normalize_text("\ufeffa\r\nb\rc\n") == ["a", "b", "c", ""]
    assert normalize_text("\tx") == ["    x"]


def test_parse_error_carries_the_line() -> None:
    error = SmiParseError("bad", 7)
    assert (error.message, error.line) == ("bad", 7)
    assert str(error) == "line 7: bad"
    assert isinstance(error, ValueError)


@pytest.mark.parametrize(
    ("line", "kind", "index", "bus", "reason"),
    [
        (
            "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error",
            SmiErrorKind.DEVICE_HANDLE,
            None,
            "0000:3B:00.0",
            "Unknown Error",
        ),
        (
            "Unable to determine the device handle for GPU 0000:01:00.0: Not Found",
            SmiErrorKind.DEVICE_HANDLE,
            None,
            "0000:01:00.0",
            "Not Found",
        ),
        (
            "Unable to determine the device handle for GPU3: 0000:5F:00.0: Unknown Error",
            SmiErrorKind.DEVICE_HANDLE,
            3,
            "0000:5F:00.0",
            "Unknown Error",
        ),
        (
            "Unable to determine the device handle for GPU2: Unknown Error",
            SmiErrorKind.DEVICE_HANDLE,
            2,
            None,
            "Unknown Error",
        ),
        (
            "Unable to determine the device handle for gpu 0000:08:00.0: GPU is lost.  "
            "Reboot the system to recover this GPU",
            SmiErrorKind.GPU_LOST,
            None,
            "0000:08:00.0",
            "GPU is lost.  Reboot the system to recover this GPU",
        ),
        (
            "Unable to determine the device handle for GPU0: 0000:24:00.0: GPU is lost.  "
            "Reboot the system to recover this GPU",
            SmiErrorKind.GPU_LOST,
            0,
            "0000:24:00.0",
            "GPU is lost.  Reboot the system to recover this GPU",
        ),
        (
            "Unable to detect the device handle for GPU0000:B1:00.0: Unknown Error",
            SmiErrorKind.DEVICE_HANDLE,
            None,
            "0000:B1:00.0",
            "Unknown Error",
        ),
        ("No devices were found", SmiErrorKind.NO_DEVICES, None, None, None),
        ("No devices found.", SmiErrorKind.NO_DEVICES, None, None, None),
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.",
            SmiErrorKind.NO_DRIVER,
            None,
            None,
            None,
        ),
        (
            "Failed to initialize NVML: Driver/library version mismatch",
            SmiErrorKind.VERSION_MISMATCH,
            None,
            None,
            "Driver/library version mismatch",
        ),
        (
            "Failed to initialize NVML: Unknown Error",
            SmiErrorKind.NVML_INIT,
            None,
            None,
            "Unknown Error",
        ),
        ("bash: nvidia-smi: command not found", SmiErrorKind.NOT_INSTALLED, None, None, None),
    ],
)
def test_classify_message(
    line: str, kind: SmiErrorKind, index: int | None, bus: str | None, reason: str | None
) -> None:
    error = classify_message(line, 5)
    assert error is not None
    assert (error.kind, error.gpu_index, error.bus_id, error.reason) == (kind, index, bus, reason)
    assert error.line == 5
    assert error.message == line


@pytest.mark.parametrize(
    "line",
    [
        "GPU 0: NVIDIA H200 (UUID: GPU-cb3dfa52-e2f3-9ca4-a399-7d16041c3732)",
        "    Product Name                          : NVIDIA A10",
        "0, 00000000:01:00.0, NVIDIA GeForce RTX 3080",
        "# gpu    pwr  gtemp",
        "",
    ],
)
def test_data_lines_are_not_messages(line: str) -> None:
    assert classify_message(line, 1) is None


def test_continuations_and_command_echo() -> None:
    assert is_message_continuation("NVML library version: 550.54")
    assert not is_message_continuation("GPU 0: NVIDIA H200 (UUID: GPU-1)")
    assert is_command_echo("root@gpu-node-07:~# nvidia-smi -L")
    assert is_command_echo("$ nvidia-smi --query-gpu=index --format=csv")
    assert is_command_echo(r"PS C:\Users\op> nvidia-smi.exe -q")
    assert is_command_echo("sudo /usr/bin/nvidia-smi dmon -c 5")
    assert not is_command_echo("    Name                          : /usr/bin/nvidia-smi")
    assert not is_command_echo("0  1234  C  -  -  nvidia-smi")
