"""gpu_telemetry's memory, energy and NVLink throughput readings, judged from the 1×H200 bundle
recorded with them (tests/bundles/h200x1-idle-v2: driver 580.159.04, one GPU, so NVLink is
not exposed and GPM's NVLink totals read 0), edited per case; and the older 2×H200 bundle
recorded before them, whose readings must replay as "not recorded", never as zero."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gpu_helpers import TESTS, run_bundle
from sitscheck.models import CheckResult, Metric, Status
from sitscheck.reporters.prom import render_prom

V2 = TESTS / "bundles" / "h200x1-idle-v2"
V1 = TESTS / "bundles" / "h200x2-idle-v1"
MIB = 1024 * 1024
CHECKS = ["driver", "gpu_telemetry", "nvlink"]

Edit = Callable[[dict[str, Any]], None]


def recorded(bundle: Path = V2) -> dict[str, Any]:
    gpu: dict[str, Any] = json.loads((bundle / "nvml.json").read_text())["gpus"][0]
    return gpu


def telemetry(tmp_path: Path, edit: Edit | None = None, bundle: Path = V2) -> CheckResult:
    if edit is not None:
        target = tmp_path / bundle.name
        shutil.copytree(bundle, target)
        snapshot = json.loads((target / "nvml.json").read_text())
        edit(snapshot["gpus"][0])
        (target / "nvml.json").write_text(json.dumps(snapshot))
        bundle = target
    result = run_bundle(bundle, CHECKS).check("gpu_telemetry")
    assert result is not None
    return result


def gpu0(result: CheckResult) -> dict[str, Any]:
    entry: dict[str, Any] = result.facts["gpus"][0]
    return entry


def metrics(result: CheckResult, name: str) -> list[Metric]:
    return [m for m in result.metrics if m.name == name and m.labels.get("gpu.index") == "0"]


def without_gpm_nvlink(gpu: dict[str, Any]) -> None:
    for record in gpu["gpm"]:
        record["nvlink_rx_mib_s"] = record["nvlink_tx_mib_s"] = None
    gpu["unavailable"]["nvlink_throughput.gpm"] = "not_supported"


def with_active_links(gpu: dict[str, Any]) -> None:
    """As on a multi-GPU H200 board: 18 active NVLinks (the recorded VM exposes none)."""
    gpu["nvlink"] = [{"link": n, "active": True, "version": 4} for n in range(18)]
    del gpu["unavailable"]["nvlink"]


def counters_only(start: dict[str, int], end: dict[str, int], seconds: float | None = None) -> Edit:
    """18 active NVLinks, no GPM NVLink totals, and these throughput counters (KiB)."""

    def edit(gpu: dict[str, Any]) -> None:
        without_gpm_nvlink(gpu)
        with_active_links(gpu)
        gpu["nvlink_throughput_kib_start"], gpu["nvlink_throughput_kib_end"] = start, end
        if seconds is not None:
            gpu["counters_s"] = seconds

    return edit


def test_the_recorded_readings_are_what_nvml_gave(tmp_path: Path) -> None:
    raw = recorded()
    result = telemetry(tmp_path)
    facts = gpu0(result)
    assert result.status == Status.OK and result.error is None
    with_memory = [s for s in raw["samples"] if "mem_total_bytes" in s]
    assert 1 < len(with_memory) < len(raw["samples"])  # once a second, not in every sample
    assert facts["memory_total_bytes"] == with_memory[-1]["mem_total_bytes"]
    assert facts["memory_reserved_bytes"] == with_memory[-1]["mem_reserved_bytes"] > 0
    assert facts["memory_used_bytes"]["max"] == max(s["mem_used_bytes"] for s in with_memory)
    assert facts["energy_total_j"] == raw["energy_mj_end"] / 1000
    assert facts["energy_window_j"] == round(
        (raw["energy_mj_end"] - raw["energy_mj_start"]) / 1000, 3
    )
    assert facts["nvlink_throughput_source"] == "gpm"
    assert (
        facts["nvlink_rx_bytes_per_s"]
        == facts["nvlink_tx_bytes_per_s"]
        == dict.fromkeys(("min", "mean", "p95", "max"), 0.0)
    )
    (energy,) = metrics(result, "hw.energy")
    assert (energy.value, energy.unit, energy.kind) == (raw["energy_mj_end"], "mJ", "counter")
    (limit,) = metrics(result, "hw.gpu.memory.limit")
    assert (limit.value, limit.unit, limit.kind) == (
        with_memory[-1]["mem_total_bytes"],
        "By",
        "gauge",
    )
    usage = {m.labels["stat"]: m.value for m in metrics(result, "hw.gpu.memory.usage")}
    assert usage == facts["memory_used_bytes"]
    directions = {
        m.labels["network.io.direction"] for m in metrics(result, "sitscheck.gpu.nvlink.throughput")
    }
    assert directions == {"receive", "transmit"}


def test_the_single_gpu_has_no_nvlink_to_judge(tmp_path: Path) -> None:
    report = run_bundle(V2, [*CHECKS, "topology"])
    nvlink = report.check("nvlink")
    assert nvlink is not None and nvlink.status == Status.OK
    assert "GPU 0: NVLink: not supported by this GPU or driver" in nvlink.not_judged
    bound = [v for v in report.verdicts if v.rule == "quick_check.nvlink_bandwidth_bound"]
    assert bound and all(v.status == Status.OK for v in bound)


def test_the_readings_go_out_to_prometheus_in_base_units() -> None:
    raw = recorded()
    exposition = render_prom(run_bundle(V2, CHECKS)).splitlines()

    def series(name: str) -> list[str]:
        return [line for line in exposition if line.startswith(name + "{")]

    assert "# TYPE sitscheck_hw_energy_joules_total counter" in exposition
    (energy,) = series("sitscheck_hw_energy_joules_total")
    assert float(energy.rsplit(" ", 1)[1]) == pytest.approx(raw["energy_mj_end"] / 1000)
    assert "# TYPE sitscheck_hw_gpu_memory_limit_bytes gauge" in exposition
    (limit,) = series("sitscheck_hw_gpu_memory_limit_bytes")
    assert float(limit.rsplit(" ", 1)[1]) == raw["samples"][0]["mem_total_bytes"]
    nvlink = series("sitscheck_gpu_nvlink_throughput_bytes_per_second")
    assert sorted('network_io_direction="receive"' in line for line in nvlink) == [False, True]


def test_gpm_nvlink_totals_are_mib_per_second_per_interval(tmp_path: Path) -> None:
    def busy(gpu: dict[str, Any]) -> None:
        for record, rx in zip(gpu["gpm"], (100_000.0, 200_000.0, 300_000.0), strict=True):
            record["nvlink_rx_mib_s"], record["nvlink_tx_mib_s"] = rx, rx / 2

    facts = gpu0(telemetry(tmp_path, busy))
    assert facts["nvlink_throughput_source"] == "gpm"
    assert facts["nvlink_rx_bytes_per_s"] == {
        "min": 100_000.0 * MIB,
        "mean": 200_000.0 * MIB,
        "p95": 300_000.0 * MIB,
        "max": 300_000.0 * MIB,
    }
    assert facts["nvlink_tx_bytes_per_s"]["mean"] == 100_000.0 * MIB


def test_without_gpm_the_throughput_counters_give_the_windows_rate(tmp_path: Path) -> None:
    counters = counters_only({"rx": 1_000, "tx": 5_000}, {"rx": 251_000, "tx": 5_000}, 2.5)
    facts = gpu0(telemetry(tmp_path, counters))
    assert facts["nvlink_throughput_source"] == "counters"
    rx = 250_000 * 1024 / 2.5
    assert facts["nvlink_rx_bytes_per_s"] == dict.fromkeys(("min", "mean", "p95", "max"), rx)
    assert facts["nvlink_tx_bytes_per_s"]["mean"] == 0.0


def test_a_counter_that_went_back_gives_no_rate(tmp_path: Path) -> None:
    reset = counters_only({"rx": 9_000, "tx": 9_000}, {"rx": 10, "tx": 9_500})
    result = telemetry(tmp_path, reset)
    assert "nvlink_rx_bytes_per_s" not in gpu0(result)
    assert any("rx counter went back" in note for note in result.not_judged), result.not_judged


def test_counters_over_no_window_give_no_rate(tmp_path: Path) -> None:
    instant = counters_only({"rx": 0, "tx": 0}, {"rx": 4, "tx": 4}, 0.004)
    result = telemetry(tmp_path, instant)
    assert "nvlink_rx_bytes_per_s" not in gpu0(result)
    assert any("NVLink throughput: the counters were read only" in n for n in result.not_judged)


def test_a_failed_counter_read_without_gpm_leaves_the_check_unknown(tmp_path: Path) -> None:
    detail = "nvmlDeviceGetFieldValues(field 139, all links): NVML_ERROR_UNKNOWN"

    def failed(gpu: dict[str, Any]) -> None:
        without_gpm_nvlink(gpu)
        with_active_links(gpu)
        gpu["unavailable"]["nvlink_throughput.counters"] = "error"
        gpu["failures"]["nvlink_throughput.counters"] = detail

    result = telemetry(tmp_path, failed)
    assert result.status == Status.UNKNOWN
    assert result.error is not None and detail in result.error


def test_a_failed_counter_read_is_no_error_where_gpm_gives_the_rate(tmp_path: Path) -> None:
    def failed(gpu: dict[str, Any]) -> None:
        with_active_links(gpu)
        gpu["unavailable"]["nvlink_throughput.counters"] = "error"
        gpu["failures"]["nvlink_throughput.counters"] = "nvmlDeviceGetFieldValues: failed"

    result = telemetry(tmp_path, failed)
    assert result.error is None and gpu0(result)["nvlink_throughput_source"] == "gpm"


def test_a_gpu_without_nvlink_and_without_gpm_totals_says_so(tmp_path: Path) -> None:
    result = telemetry(tmp_path, without_gpm_nvlink)
    assert "nvlink_rx_bytes_per_s" not in gpu0(result)
    assert (
        "GPU 0: NVLink throughput: the GPU has no NVLinks (not supported by this GPU or driver)"
        in (result.not_judged)
    )


def test_energy_not_supported_is_not_judged_never_zero(tmp_path: Path) -> None:
    def unsupported(gpu: dict[str, Any]) -> None:
        gpu["energy_mj_start"] = gpu["energy_mj_end"] = None
        gpu["unavailable"]["energy"] = "not_supported"

    result = telemetry(tmp_path, unsupported)
    assert result.error is None
    assert "energy_total_j" not in gpu0(result) and metrics(result, "hw.energy") == []
    assert "GPU 0: energy: not supported by this GPU or driver" in result.not_judged


def test_a_failed_memory_read_leaves_the_check_unknown(tmp_path: Path) -> None:
    def failed(gpu: dict[str, Any]) -> None:
        for sample in gpu["samples"]:
            for key in ("mem_total_bytes", "mem_used_bytes", "mem_reserved_bytes"):
                sample.pop(key, None)
        gpu["unavailable"]["memory"] = "timeout"
        gpu["failures"]["memory"] = "nvmlDeviceGetMemoryInfo(handle) did not return within 5.0s"

    result = telemetry(tmp_path, failed)
    assert result.status == Status.UNKNOWN and result.error is not None
    assert "nvmlDeviceGetMemoryInfo" in result.error
    assert "memory_total_bytes" not in gpu0(result)


def test_a_v1_memory_reading_has_no_reserved_part(tmp_path: Path) -> None:
    def v1(gpu: dict[str, Any]) -> None:
        for sample in gpu["samples"]:
            sample.pop("mem_reserved_bytes", None)

    facts = gpu0(telemetry(tmp_path, v1))
    assert "memory_reserved_bytes" not in facts and facts["memory_total_bytes"] > 0


@pytest.mark.parametrize(
    "note",
    [
        "GPUs 0-1: energy: not recorded",
        "GPUs 0-1: memory used: not recorded",
        "GPUs 0-1: NVLink throughput: not recorded",
    ],
)
def test_an_older_bundle_replays_with_the_readings_not_recorded(tmp_path: Path, note: str) -> None:
    result = telemetry(tmp_path, bundle=V1)
    assert result.status == Status.OK and result.error is None
    assert note in result.not_judged, result.not_judged
    for entry in result.facts["gpus"]:
        assert not {k for k in entry if k.startswith(("memory_", "energy_", "nvlink_"))}
    assert not [m for m in result.metrics if m.name in ("hw.energy", "hw.gpu.memory.limit")]
