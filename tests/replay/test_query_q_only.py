"""Bundles holding only `nvidia-smi-q.txt` (the file operators attach to tickets) get real
verdicts from the GPU checks: real `-q` outputs of the shared corpus (tests/corpus/shared/smi,
with their sources) and of the recorded 2xH200 node. Expected values are read from each text."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from corpus_paths import SHARED_CORPUS
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.models import Report, Severity, Status

TESTS = Path(__file__).resolve().parent.parent
SAMPLES = SHARED_CORPUS / "smi"
RECORDED = TESTS / "bundles" / "h200x2-idle-v1"
GPU_CHECKS = ("driver", "gpu_telemetry", "memory_errors", "pcie_link")


def q_only(tmp_path: Path, source: Path) -> Path:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    shutil.copyfile(source, bundle / "nvidia-smi-q.txt")
    return bundle


def sample(prefix: str) -> Path:
    (path,) = SAMPLES.glob(prefix + "-q-*.txt")
    return path


def replay(bundle: Path, **config: Any) -> Report:
    return execute(RunRequest(RunConfig(**config), str(bundle)))


def above_ok(report: Report) -> list[tuple[str, int | None]]:
    found = [
        (f.code, f.device.index if f.device else None)
        for c in report.checks
        for f in c.findings
        if f.severity is not Severity.INFO
    ]
    found += [
        (v.rule, v.device.index if v.device else None)
        for v in report.verdicts
        if v.status in (Status.WARNING, Status.CRITICAL, Status.UNKNOWN)
    ]
    found += [(f"{c.name} error", None) for c in report.checks if c.error is not None]
    return sorted(found, key=repr)


def gpu_facts(report: Report, check: str, index: int = 0) -> dict[str, Any]:
    result = report.check(check)
    assert result is not None and result.status is not Status.SKIPPED, check
    entry: dict[str, Any] = next(g for g in result.facts["gpus"] if g["index"] == index)
    return entry


def test_an_idle_h200_q_alone_is_a_healthy_h200(tmp_path: Path) -> None:
    report = replay(q_only(tmp_path, sample("003")))  # 1x H200, driver 550.90.12, idle
    assert above_ok(report) == []
    assert report.status == Status.OK and report.profile == "h200-sxm"
    driver = report.check("driver")
    assert driver is not None
    assert (driver.facts["driver_version"], driver.facts["gpu_count"]) == ("550.90.12", 1)
    assert driver.facts["gpus"][0]["vbios"] == "96.00.A5.00.03"
    link = gpu_facts(report, "pcie_link")
    assert (link["width_current"], link["width_max"], link["gen_current"]) == (16, 16, 5)
    assert link["width_degraded"] is False
    memory = gpu_facts(report, "memory_errors")
    assert (memory["ecc_volatile_uncorrected"], memory["remap_pending"]) == (0, False)
    telemetry = gpu_facts(report, "gpu_telemetry")
    assert telemetry["power_w"]["max"] == 74.58 and telemetry["power_limit_w"] == 700.0
    assert telemetry["util_gpu_pct"]["max"] == 0.0
    for name in GPU_CHECKS:
        result = report.check(name)
        assert result is not None and result.status == Status.OK, name
        assert result.facts["source"] == "nvidia-smi -q", name


def test_the_hung_a100_shows_one_idle_gpu_of_eight(tmp_path: Path) -> None:
    """`nvidia-smi -q -i 0` of a hung job (huggingface/m4-logs): GPU 0 at 0 % with 22 GB held
    by a python process, its memory and link clean, 7 of the 8 attached GPUs not shown."""
    bundle = q_only(tmp_path, sample("018"))
    report = replay(bundle)
    assert above_ok(report) == []
    assert report.profile == "a100-sxm-80gb"
    driver = report.check("driver")
    assert driver is not None
    assert (driver.facts["gpu_count"], driver.facts["attached_gpus"]) == (1, 8)
    assert any("shows 1 of the 8 attached GPUs" in n for n in driver.not_judged)
    telemetry = gpu_facts(report, "gpu_telemetry")
    assert telemetry["util_gpu_pct"]["max"] == 0.0 and telemetry["temp_slowdown_c"] == 89
    idle = [v for v in report.verdicts if v.rule == "gpu_telemetry.idle_not_judged"]
    assert [(v.device.index if v.device else None) for v in idle] == [0]
    assert "GPU idle (0 % mean utilization" in (idle[0].message or "")
    # the count: 8 attached is what the driver says; the -q cannot tell how many answer
    assert above_ok(replay(bundle, expect_gpus=8)) == []
    fewer = replay(bundle, expect_gpus=9)
    assert above_ok(fewer) == [("driver.gpu_count", None)]


def test_an_a10_with_a_pending_row_remap_says_so(tmp_path: Path) -> None:
    # leptonai/gpud test data: "Uncorrectable Error : 4", "Pending : Yes"
    report = replay(q_only(tmp_path, sample("001")))
    assert above_ok(report) == [("memory_errors.remap_pending", 0)]
    assert report.profile is None  # no A10 profile ships
    memory = gpu_facts(report, "memory_errors")
    assert (memory["remap_uncorrected"], memory["remap_pending"]) == (4, True)


def test_a_loaded_h100_on_590_is_judged_busy_and_healthy(tmp_path: Path) -> None:
    report = replay(q_only(tmp_path, sample("005")))  # gpu-burn: 100 %, 629 W of 700 W
    assert above_ok(report) == []
    assert report.profile == "h100-sxm"
    telemetry = gpu_facts(report, "gpu_telemetry")
    assert telemetry["util_gpu_pct"]["mean"] == 100.0 and telemetry["power_w"]["mean"] == 629.45
    assert gpu_facts(report, "pcie_link")["replay_count"] == 9


def test_the_gh200_remapped_row_is_counted_not_pending(tmp_path: Path) -> None:
    report = replay(q_only(tmp_path, sample("004")))  # Aggregate DRAM Uncorrectable 1
    memory = gpu_facts(report, "memory_errors")
    assert (memory["ecc_aggregate_uncorrected"], memory["ecc_volatile_uncorrected"]) == (1, 0)
    assert (memory["remap_uncorrected"], memory["remap_pending"]) == (1, False)
    codes = [f.code for c in report.checks for f in c.findings]
    assert "memory_errors.remap_pending" not in codes
    assert "pcie_link.width_degraded" not in codes  # x1 of its own x1: the Grace C2C link
    assert report.profile == "gh200"  # 0x2342, not h200-sxm (0x2335) for the "H200" in its name
    fired = [(v.rule, v.status.value) for v in report.verdicts if v.status.value != "ok"]
    assert ("quick_check.pcie_width_below_x16", "warning") not in fired  # x1 by design


def test_an_old_partial_q_judges_only_what_it_printed(tmp_path: Path) -> None:
    report = replay(q_only(tmp_path, sample("017")))  # 375.66 -q -d MEMORY,UTILIZATION
    assert above_ok(report) == []
    telemetry = gpu_facts(report, "gpu_telemetry")
    assert telemetry["util_gpu_pct"]["max"] == 47.0
    pcie = report.check("pcie_link")
    assert pcie is not None
    assert any("PCIe link width (nvidia-smi -q): not in the evidence" in n for n in pcie.not_judged)


def test_the_recorded_h200_node_q_alone_matches_what_nvml_saw(tmp_path: Path) -> None:
    alone = replay(q_only(tmp_path, RECORDED / "nvidia-smi-q.txt"))
    full = replay(RECORDED)
    assert above_ok(alone) == [] and alone.profile == "h200-sxm"
    for index in (0, 1):
        for check, keys in (
            ("pcie_link", ("width_current", "width_max", "gen_max")),
            ("memory_errors", ("ecc_volatile_uncorrected", "ecc_aggregate_corrected",
                               "remap_pending", "remap_histogram")),
            ("gpu_telemetry", ("power_limit_w", "sm_clock_max_mhz", "mem_clock_max_mhz")),
        ):  # fmt: skip
            q_facts, nvml_facts = gpu_facts(alone, check, index), gpu_facts(full, check, index)
            assert {k: q_facts[k] for k in keys} == {k: nvml_facts[k] for k in keys}, check


def test_a_q_that_is_not_q_output_is_unknown_naming_the_file(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "nvidia-smi-q.txt").write_text("this is not nvidia-smi output\n")
    report = replay(bundle)
    for name in GPU_CHECKS:
        result = report.check(name)
        assert result is not None and result.status == Status.UNKNOWN, name
        assert "nvidia-smi-q.txt" in (result.error or ""), name
    assert report.exit_code == 3


@pytest.mark.parametrize("prefix", ["001", "003", "004", "005", "017", "018"])
def test_every_sample_runs_every_gpu_check(tmp_path: Path, prefix: str) -> None:
    report = replay(q_only(tmp_path, sample(prefix)))
    for name in GPU_CHECKS:
        result = report.check(name)
        assert result is not None and result.error is None, (name, result and result.error)
