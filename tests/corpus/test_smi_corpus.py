"""Every smi sample of the shared corpus (tests/corpus/shared/smi) parses with the parser for
its kind (chosen by file name), and gives the concrete values read by hand from that file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from corpus_paths import SHARED_CORPUS
from sitscheck.smi.dmon import parse_dmon, parse_dmon_result
from sitscheck.smi.list_gpus import parse_list_gpus
from sitscheck.smi.query_csv import (
    field_bitmask,
    field_bool,
    field_float,
    field_int,
    field_str,
    parse_query_csv_result,
)
from sitscheck.smi.query_q import SmiGpu, SmiQuery, parse_query_q
from sitscheck.smi.values import SmiParseError, ValueKind

_NAMES = sorted(p.name for p in (SHARED_CORPUS / "smi").glob("*.txt"))


def _kind(name: str) -> str:
    """The parser a sample is for, from its file name."""
    if "-q-" in name:
        return "q"
    if "csv" in name:
        return "csv"
    if "dmon" in name or "pmon" in name:
        return "dmon"
    if "default-table" in name:
        return "table"
    raise AssertionError(f"no smi parser kind for corpus file {name}")


def _read(corpus: Path, prefix: str) -> str:
    (path,) = (corpus / "smi").glob(prefix + "-*.txt")
    return path.read_text()


def _only_gpu(query: SmiQuery) -> SmiGpu:
    assert len(query.gpus) == 1
    return query.gpus[0]


# --- every sample, by kind -------------------------------------------------------------------


@pytest.mark.parametrize("name", _NAMES)
def test_sample_parses_with_its_parser(corpus: Path, name: str) -> None:
    text = (corpus / "smi" / name).read_text()
    kind = _kind(name)
    if kind == "q":
        query = parse_query_q(text)
        assert query.gpus and not query.errors
        assert all(g.tree.children for g in query.gpus)
    elif kind == "csv":
        result = parse_query_csv_result(text)
        assert result.fields and not result.errors
        assert all(set(row) == set(result.fields) for row in result.rows)
    elif kind == "dmon":
        rows = parse_dmon(text)
        assert rows and all(r.gpu is not None for r in rows)
    else:
        # The default table has no parser here: each parser must refuse it, never misread it.
        parsers: list[Callable[[str], object]] = [
            parse_query_q,
            parse_list_gpus,
            parse_dmon,
            parse_query_csv_result,
        ]
        for parse in parsers:
            with pytest.raises(SmiParseError) as caught:
                parse(text)
            assert caught.value.line == 1


def test_corpus_holds_the_twenty_annotated_samples(corpus: Path) -> None:
    names = sorted(p.name for p in (corpus / "smi").glob("*.txt"))
    assert len(names) >= 20
    kinds = [_kind(n) for n in names]
    assert kinds.count("q") == 6
    assert kinds.count("csv") == 6
    assert kinds.count("dmon") == 5
    assert kinds.count("table") == 3


# --- nvidia-smi -q ---------------------------------------------------------------------------


def test_q_001_a10_535_remapped_rows_pending(corpus: Path) -> None:
    query = parse_query_q(_read(corpus, "001"))
    assert (query.driver_version, query.cuda_version, query.attached_gpus) == (
        "535.129.03",
        "12.2",
        1,
    )
    gpu = _only_gpu(query)
    assert gpu.bus_id == "00000000:07:00.0"
    assert gpu.product_name == "NVIDIA A10"
    assert gpu.serial == "1324521052681"
    assert gpu.uuid == "GPU-73d12ef7-f589-f867-4259-c7090ab44736"
    assert gpu.vbios_version == "94.02.5C.00.04"
    assert gpu.persistence_mode.as_bool() is True
    assert gpu.power.draw.as_float() == 43.89
    assert gpu.power.enforced_limit.as_float() == 150.0
    assert gpu.power.min_limit.as_float() == 100.0
    assert gpu.module_power.draw.kind is ValueKind.NOT_SUPPORTED
    assert (gpu.pcie.gen_current.as_int(), gpu.pcie.gen_max.as_int()) == (4, 4)
    assert (gpu.pcie.width_current.as_int(), gpu.pcie.width_max.as_int()) == (16, 16)
    assert gpu.pcie.width_current.unit == "x"
    assert gpu.pcie.gen_host_max.kind is ValueKind.NOT_SUPPORTED
    assert gpu.remapped_rows.uncorrectable.as_int() == 4
    assert gpu.remapped_rows.pending.as_bool() is True
    assert gpu.remapped_rows.failure.as_bool() is False
    assert gpu.remapped_rows.histogram_max.as_int() == 192
    assert gpu.remapped_rows.histogram_max.unit == "bank(s)"
    t = gpu.temperature
    assert (t.gpu_current.as_int(), t.gpu_shutdown.as_int(), t.gpu_slowdown.as_int()) == (
        33,
        101,
        98,
    )
    assert t.gpu_max_operating.as_int() == 91
    assert t.memory_current.kind is ValueKind.NOT_SUPPORTED  # GDDR6: no memory sensor
    assert t.gpu_tlimit.kind is ValueKind.NOT_SUPPORTED
    assert gpu.clocks_event_reasons["Idle"].as_bool() is True
    assert gpu.clocks_event_reasons["SW Power Cap"].as_bool() is False
    assert gpu.ecc.mode_current.as_text() == "Enabled"
    assert gpu.ecc.aggregate.uncorrectable_total.as_int() == 0
    assert gpu.ecc.retired_single_bit.kind is ValueKind.NOT_SUPPORTED
    assert gpu.get("GPU Virtualization Mode/Virtualization Mode").as_text() == "Pass-Through"
    assert gpu.get("FB Memory Usage/Total").as_int() == 23028
    assert gpu.processes == ()


def test_q_003_h200_550_tlimit_and_memory_power(corpus: Path) -> None:
    gpu = _only_gpu(parse_query_q(_read(corpus, "003")))
    assert gpu.product_name == "NVIDIA H200"
    assert gpu.get("FB Memory Usage/Total").as_int() == 143771
    assert gpu.get("FB Memory Usage/Total").unit == "MiB"
    assert (gpu.pcie.gen_current.as_int(), gpu.pcie.width_current.as_int()) == (5, 16)
    t = gpu.temperature
    assert t.gpu_current.as_int() == 28
    assert t.gpu_tlimit.as_int() == 59
    assert t.gpu_shutdown_tlimit.as_int() == -8  # relative to T.Limit, kept apart
    assert t.gpu_slowdown_tlimit.as_int() == -2
    assert t.gpu_shutdown.kind is ValueKind.ABSENT
    assert t.memory_current.as_int() == 25
    assert gpu.memory_power_draw.as_float() == 41.76  # "GPU Memory Power Readings " (space)
    assert gpu.power.draw.as_float() == 74.58
    assert gpu.power.enforced_limit.as_float() == 700.0
    assert gpu.remapped_rows.histogram_max.as_int() == 3072
    assert gpu.ecc.volatile.sram_uncorrectable.as_int() == 0  # Parity + SEC-DED
    assert gpu.ecc.sram_threshold_exceeded.as_bool() is False
    assert gpu.get("Fabric/State").as_text() == "Completed"
    assert gpu.get("Fabric/Health/Bandwidth").kind is ValueKind.NOT_SUPPORTED
    assert gpu.get("GPU C2C Mode").as_bool() is False


def test_q_004_gh200_c2c_x1_link_and_remapped_row(corpus: Path) -> None:
    gpu = _only_gpu(parse_query_q(_read(corpus, "004")))
    assert gpu.product_name == "NVIDIA GH200 480GB"
    assert gpu.get("Addressing Mode").as_text() == "ATS"
    assert gpu.get("GPU C2C Mode").as_bool() is True
    assert (gpu.pcie.width_current.as_int(), gpu.pcie.width_max.as_int()) == (1, 1)
    assert gpu.get("BAR1 Memory Usage/Total").kind is ValueKind.NOT_SUPPORTED
    assert gpu.module_power.draw.as_float() == 169.77
    assert gpu.module_power.enforced_limit.as_float() == 1000.0
    assert gpu.power.enforced_limit.as_float() == 700.0
    assert gpu.power.requested_limit.as_float() == 900.0
    assert gpu.ecc.aggregate.dram_uncorrectable.as_int() == 1
    assert gpu.ecc.aggregate.uncorrectable_total.as_int() == 1
    assert gpu.ecc.volatile.uncorrectable_total.as_int() == 0
    assert gpu.remapped_rows.uncorrectable.as_int() == 1
    assert gpu.remapped_rows.histogram_max.as_int() == 3071
    assert gpu.remapped_rows.histogram_high.as_int() == 1
    assert gpu.get("Fabric/CliqueId").kind is ValueKind.NOT_SUPPORTED
    assert gpu.temperature.memory_current.as_int() == 39


def test_q_005_h100_590_wide_columns_newest_fields(corpus: Path) -> None:
    query = parse_query_q(_read(corpus, "005"))
    assert (query.driver_version, query.cuda_version) == ("590.48.01", "13.1")
    gpu = _only_gpu(query)
    assert gpu.bus_id == "00000000:00:09.0"
    assert gpu.product_name == "NVIDIA H100 80GB HBM3"
    assert gpu.pcie.replays_since_reset.as_int() == 9
    assert gpu.power.draw.as_float() == 629.45  # only "Average Power Draw" is printed
    assert gpu.power.draw_instant.as_float() == 588.39
    assert gpu.power.default_limit.as_float() == 700.0
    assert gpu.memory_power_draw.as_float() == 85.83
    assert gpu.get("GPU Memory Power Readings/Instantaneous Power Draw").is_missing
    assert gpu.get("Display Mode").kind is ValueKind.NOT_SUPPORTED  # deprecated
    assert gpu.get("Applications Clocks/Graphics").kind is ValueKind.NOT_SUPPORTED
    assert gpu.get("Clocks Event Reasons Counters/SW Power Capping").unit == "us"
    assert gpu.get("EDPp Multiplier").as_float() == 100.0
    assert gpu.get("Capabilities/EGM").as_text() == "disabled"
    assert gpu.get("Utilization/GPU").as_int() == 100
    assert gpu.get("GPU PDI").as_bitmask() == 0xD52BAE2E458244E2
    assert gpu.get("PCI/Atomic Caps Outbound").as_text() == (
        "FETCHADD_32 FETCHADD_64 SWAP_32 SWAP_64 CAS_32 CAS_64"
    )
    assert gpu.get("Power Smoothing").kind is ValueKind.NOT_SUPPORTED
    assert gpu.get("Power Smoothing/Primary Power Floor").kind is ValueKind.NOT_SUPPORTED
    assert gpu.ecc.unrepairable_memory.as_bool() is False
    assert gpu.temperature.memory_current.as_int() == 55
    assert gpu.temperature.gpu_tlimit.as_int() == 26
    assert [p.pid.as_int() for p in gpu.processes] == [11327, 11328, 11345]
    assert [p.used_memory.as_int() for p in gpu.processes] == [2566, 1542, 15690]
    assert [p.name.as_text() for p in gpu.processes] == [
        "/root/tools/memhog",
        "/root/tools/memhog",
        "./gpu_burn",
    ]
    assert all(p.type.as_text() == "C" for p in gpu.processes)
    assert all(p.gpu_instance_id.kind is ValueKind.NOT_SUPPORTED for p in gpu.processes)


def test_q_017_375_memory_utilization_subset(corpus: Path) -> None:
    query = parse_query_q(_read(corpus, "017"))
    assert query.driver_version == "375.66"
    assert query.cuda_version is None
    gpu = _only_gpu(query)
    assert gpu.bus_id == "0000:01:00.0"
    assert gpu.get("FB Memory Usage/Total").as_int() == 1995
    assert gpu.get("BAR1 Memory Usage/Used").as_int() == 5
    assert gpu.get("Utilization/Gpu").as_int() == 47
    assert gpu.get("Utilization/Memory").as_int() == 6
    assert gpu.product_name is None  # not in a -d MEMORY,UTILIZATION subset
    assert gpu.power.draw.kind is ValueKind.ABSENT
    assert gpu.pcie.width_current.kind is ValueKind.ABSENT


def test_q_018_a100_525_one_section_of_eight_throttle_names(corpus: Path) -> None:
    query = parse_query_q(_read(corpus, "018"))
    assert query.attached_gpus == 8
    gpu = _only_gpu(query)
    assert gpu.product_name == "NVIDIA A100-SXM4-80GB"
    assert gpu.get("Minor Number").as_int() == 2
    assert gpu.node("Clocks Throttle Reasons") is gpu.node("Clocks Event Reasons")
    assert gpu.get("Clocks Event Reasons/SW Power Cap").as_bool() is False
    assert gpu.get("Clocks Throttle Reasons/HW Thermal Slowdown").as_bool() is False
    assert gpu.clocks_event_reasons["Idle"].as_bool() is False
    assert gpu.power.management.as_text() == "Supported"
    assert gpu.power.draw.as_float() == 67.97
    assert gpu.power.requested_limit.as_float() == 400.0  # the old "Power Limit"
    assert gpu.power.enforced_limit.as_float() == 400.0
    t = gpu.temperature
    assert (t.gpu_shutdown.as_int(), t.gpu_slowdown.as_int(), t.gpu_max_operating.as_int()) == (
        92,
        89,
        85,
    )
    assert (t.memory_current.as_int(), t.memory_max_operating.as_int()) == (45, 95)
    assert gpu.ecc.mode_current.as_bool() is True  # printed "Ecc Mode"
    assert gpu.pcie.gen_host_max.as_int() == 4
    assert gpu.remapped_rows.histogram_max.as_int() == 640
    (process,) = gpu.processes
    assert process.pid.as_int() == 280058
    assert process.used_memory.as_int() == 22374
    assert process.name.as_text() == (
        "/gpfswork/rech/cnw/commun/conda/shared-m4-2023-02-28/bin/python"
    )


# --- --query-*=... --format=csv ----------------------------------------------------------------


def test_csv_008_h100_590_212_fields(corpus: Path) -> None:
    result = parse_query_csv_result(_read(corpus, "008"))
    assert len(result.fields) == 212
    (row,) = result.rows
    assert result.units["power.draw"] == "W"
    assert field_float(row, "power.draw") == 631.95
    assert field_float(row, "power.draw.instant") == 625.68
    assert field_bitmask(row, "clocks_event_reasons.supported") == 0x1FF
    assert field_bitmask(row, "clocks_event_reasons.active") == 0
    assert field_bool(row, "clocks_event_reasons.sw_power_cap") is False
    assert row["fan.speed"].kind is ValueKind.NOT_SUPPORTED
    assert row["fan.speed"].raw == "[N/A]"
    assert row["display_mode"].kind is ValueKind.NOT_SUPPORTED
    assert row["fabric.health.summary"].raw == "N/A"
    assert row["fabric.health.summary"].kind is ValueKind.NOT_SUPPORTED
    assert row["platform.chassis_serial_number"].kind is ValueKind.EMPTY
    assert field_str(row, "platform.peer_type") == "Direct Connected"
    assert field_int(row, "platform.module_id") == 7
    assert field_int(row, "memory.total") == 81559
    assert row["memory.total"].unit == "MiB"
    assert field_int(row, "pcie.link.width.current") == 16
    assert field_int(row, "pcie.link.gen.max") == 5
    assert (field_int(row, "temperature.gpu"), field_int(row, "temperature.memory")) == (59, 54)
    assert field_float(row, "edpp_multiplier") == 100.0
    assert row["hostname"].kind is ValueKind.NOT_AVAILABLE
    assert field_bitmask(row, "pci.device_id") == 0x233010DE
    assert field_int(row, "remapped_rows.histogram.max") == 2560
    assert field_bool(row, "persistence_mode") is True
    assert field_float(row, "clocks.current.sm") == 1980.0
    assert field_float(row, "clocks.sm") == 1980.0  # alias


def test_csv_014_windows_wddm_471_throttle_reasons(corpus: Path) -> None:
    result = parse_query_csv_result(_read(corpus, "014"))
    assert len(result.fields) == 115
    assert not any(f.startswith("clocks_throttle_reasons") for f in result.fields)
    (row,) = result.rows
    assert field_bitmask(row, "clocks_event_reasons.active") == 1
    assert field_bitmask(row, "clocks_throttle_reasons.active") == 1  # old name still reads
    assert field_bool(row, "clocks_event_reasons.gpu_idle") is True
    assert field_str(row, "driver_model.current") == "WDDM"
    assert row["persistence_mode"].raw == "[N/A]"
    assert row["persistence_mode"].kind is ValueKind.NOT_SUPPORTED
    assert row["temperature.memory"].raw == "N/A"
    assert row["temperature.memory"].kind is ValueKind.NOT_SUPPORTED
    assert field_int(row, "temperature.gpu") == 36
    assert field_float(row, "power.draw") == 32.7
    assert field_int(row, "fan.speed") == 38
    assert field_str(row, "vbios_version") == "90.04.7a.40.73"
    assert field_str(row, "name") == "NVIDIA GeForce RTX 2080 SUPER"
    assert row["ecc.mode.current"].kind is ValueKind.NOT_SUPPORTED


def test_csv_009_compute_apps(corpus: Path) -> None:
    rows = parse_query_csv_result(_read(corpus, "009")).rows
    assert [field_int(r, "pid") for r in rows] == [11327, 11328, 11345]
    assert [field_int(r, "used_gpu_memory") for r in rows] == [2566, 1542, 15690]
    assert [field_str(r, "process_name") for r in rows][-1] == "./gpu_burn"
    assert rows[0]["used_gpu_memory"].unit == "MiB"


def test_csv_010_retired_pages_na_rows(corpus: Path) -> None:
    rows = parse_query_csv_result(_read(corpus, "010")).rows
    assert [field_str(r, "retired_pages.cause") for r in rows] == [
        "Single Bit ECC",
        "Double Bit ECC",
    ]
    assert all(r["retired_pages.address"].raw == "[N/A]" for r in rows)
    assert all(r["retired_pages.address"].is_missing for r in rows)


def test_csv_011_header_only(corpus: Path) -> None:
    result = parse_query_csv_result(_read(corpus, "011"))
    assert result.rows == ()
    assert len(result.fields) == 10
    assert result.units["time"] == "ms"
    assert result.units["max_memory_usage"] == "MiB"


def test_csv_019_eight_a100_one_idle(corpus: Path) -> None:
    rows = parse_query_csv_result(_read(corpus, "019")).rows
    assert len(rows) == 8
    assert field_float(rows[0], "power.draw") == 67.97
    assert [field_int(r, "utilization.gpu") for r in rows] == [0] + [100] * 7
    assert [field_int(r, "temperature.gpu") for r in rows] == [28, 30, 28, 32, 30, 31, 30, 32]
    assert all(r["fan.speed"].kind is ValueKind.NOT_SUPPORTED for r in rows)


# --- dmon / pmon -------------------------------------------------------------------------------


def test_dmon_006_idle_590_columns(corpus: Path) -> None:
    rows = parse_dmon(_read(corpus, "006"))
    assert len(rows) == 5
    assert list(rows[0].values) == [
        "pwr", "gtemp", "mtemp", "sm", "mem", "enc", "dec", "jpg", "ofa", "mclk", "pclk",
    ]  # fmt: skip
    assert [r.values["mtemp"].as_int() for r in rows] == [47, 47, 47, 48, 47]
    assert {r.values["pwr"].as_int() for r in rows} == {69}
    assert rows[0].get("PCLK") is rows[0].values["pclk"]
    assert rows[0].get("fan") is None
    assert rows[0].units["pclk"] == "MHz"
    assert rows[0].values["pclk"].number == 345


def test_dmon_013_load_sm_100(corpus: Path) -> None:
    rows = parse_dmon(_read(corpus, "013"))
    assert [r.values["pwr"].as_int() for r in rows] == [631, 634, 633, 634, 636]
    assert [r.values["mem"].as_int() for r in rows] == [10, 10, 9, 9, 9]
    assert {r.values["sm"].as_int() for r in rows} == {100}
    assert rows[0].values["pwr"].unit == "W"


def test_dmon_015_utilization_four_columns(corpus: Path) -> None:
    rows = parse_dmon(_read(corpus, "015"))
    assert len(rows) == 9
    assert all(list(r.values) == ["sm", "mem", "enc", "dec"] for r in rows)
    assert all(v.as_int() == 0 for r in rows for v in r.values.values())


def test_dmon_016_all_groups_four_gpus_2016(corpus: Path) -> None:
    rows = parse_dmon(_read(corpus, "016"))
    assert [r.gpu for r in rows] == [0, 1, 2, 3]
    assert [r.values["temp"].as_int() for r in rows] == [83, 84, 80, 70]
    assert [r.values["pclk"].as_int() for r in rows] == [1683, 1733, 1759, 1784]
    assert all(r.values["sbecc"].kind is ValueKind.NOT_SUPPORTED for r in rows)
    assert rows[0].values["fb"].as_int() == 11651
    assert rows[0].values["fb"].unit == "MB"
    assert rows[0].units["tviol"] == "bool"
    assert rows[0].values["rxpci"].unit == "MB/s"
    assert rows[3].values["rxpci"].as_int() == 62


def test_pmon_012_dash_cells(corpus: Path) -> None:
    result = parse_dmon_result(_read(corpus, "012"))
    rows = result.rows
    assert len(rows) == 15
    assert all(r.is_process and r.gpu == 0 for r in rows)
    assert [r.values["pid"].as_int() for r in rows[:3]] == [11327, 11328, 11345]
    assert [r.values["command"].raw for r in rows[:3]] == ["memhog", "memhog", "gpu_burn"]
    memhog, burn = rows[0], rows[2]
    assert memhog.values["sm"].kind is ValueKind.NOT_AVAILABLE
    assert (burn.values["sm"].as_int(), burn.values["mem"].as_int()) == (99, 10)
    assert burn.values["type"].as_text() == "C"
    assert burn.units["type"] == "C/G"
