"""The GPU checks and rules/gpu-health.yaml over the recorded 2×H200 bundle and its faults.

Each fault bundle under tests/bundles/faults (made by make_fault_bundles.py) must give exactly
its one finding or verdict, on its GPU, and nothing else above ok; the recorded idle bundle
and the synthesised busy one must give nothing above ok.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from gpu_helpers import (
    CSV_BUNDLES,
    FAULTS,
    GPU_CHECKS,
    IDLE,
    REPO,
    above_ok,
    facts_of,
    nvidia_smi_only,
    run_bundle,
)
from sitscheck.models import Report, Status

# --- the recorded idle bundle ------------------------------------------------------------------


def test_idle_bundle_through_the_cli_exits_0_with_nothing_above_ok() -> None:
    sitscheck = Path(sys.executable).parent / "sitscheck"
    argv = [str(sitscheck), "run", "--from", str(IDLE), "--output", "json"]
    for name in GPU_CHECKS:
        argv += ["--check", name]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = msgspec.convert(json.loads(done.stdout), Report)
    assert report.status == Status.OK
    assert above_ok(report) == []
    assert {c.name: c.status for c in report.checks} == dict.fromkeys(GPU_CHECKS, Status.OK)


def test_idle_h200_at_idle_power_is_healthy_and_reads_as_idle(idle_report: Report) -> None:
    for index in (0, 1):
        telemetry = facts_of(idle_report, "gpu_telemetry", index)
        assert 78.0 < telemetry["power_w"]["mean"] < 79.0
        assert telemetry["power_limit_w"] == 700.0
        assert telemetry["util_gpu_pct"] == {"min": 0.0, "mean": 0.0, "p95": 0.0, "max": 0.0}
        assert telemetry["clock_reasons_seen"] == ["gpu_idle"]
        assert telemetry["temp_slowdown_c"] == 89.0
        assert telemetry["samples"] == 13
        assert set(telemetry["power_w"]) == {"min", "mean", "p95", "max"}
    assert idle_report.profile == "h200-sxm"  # so the TDP-based rule had its input
    verdicts = {v.rule: v.status for v in idle_report.verdicts if v.rule.startswith("gpu_tel")}
    assert verdicts["gpu_telemetry.power_low_busy"] == Status.OK


def test_cumulative_counters_that_did_not_move_are_not_findings(idle_report: Report) -> None:
    pcie0, pcie1 = (facts_of(idle_report, "pcie_link", i) for i in (0, 1))
    assert (pcie0["replay_count"], pcie1["replay_count"]) == (2, 4)
    assert pcie0["replay_delta"] == 0 and pcie0["replay_per_min"] == 0.0
    nvlink = facts_of(idle_report, "nvlink", 0)
    assert nvlink["errors_total"]["crc_data"] == 106
    assert nvlink["links_active"] == 18 and nvlink["inactive_links"] == []
    result = idle_report.check("nvlink")
    assert result is not None and result.findings == []
    # the recording has no end-of-window NVLink reads: growth is said to be not judged
    assert any("NVLink error growth" in n for n in result.not_judged)


def test_facts_carry_identity_for_the_rules_join(idle_report: Report) -> None:
    for name in GPU_CHECKS[1:]:
        result = idle_report.check(name)
        assert result is not None
        gpus = result.facts["gpus"]
        assert [g["index"] for g in gpus] == [0, 1]
        assert [g["pci_bus_id"] for g in gpus] == ["0000:00:06.0", "0000:00:07.0"]
        assert all(g["name"] == "NVIDIA H200" for g in gpus)


def test_metrics_follow_the_hardware_semantic_conventions(idle_report: Report) -> None:
    telemetry = idle_report.check("gpu_telemetry")
    assert telemetry is not None
    by_name = {(m.name, m.labels.get("stat"), m.labels["gpu.index"]): m for m in telemetry.metrics}
    util = by_name[("hw.gpu.utilization", "mean", "0")]
    assert util.unit == "1" and util.value == 0.0
    power = by_name[("hw.power", "p95", "1")]
    assert power.unit == "W" and 78.0 < power.value < 79.0
    assert power.labels["hw.id"] == "GPU-9f23e032-f1a8-da44-56dc-43ccc4c4bdba"
    temps = [m for m in telemetry.metrics if m.name == "hw.temperature"]
    assert {m.labels["hw.sensor_location"] for m in temps} == {"gpu", "memory"}
    assert all(m.unit == "Cel" for m in temps)
    pcie = idle_report.check("pcie_link")
    assert pcie is not None
    replay = [m for m in pcie.metrics if m.name == "hw.errors"]
    assert [(m.labels["error.type"], m.value) for m in replay] == [
        ("pcie_replay", 2.0),
        ("pcie_replay", 4.0),
    ]
    io = [m for m in pcie.metrics if m.name == "hw.gpu.io"]
    assert {m.labels["network.io.direction"] for m in io} == {"transmit", "receive"}
    assert all(m.unit == "By/s" for m in io)


# --- fault bundles -----------------------------------------------------------------------------

FAULT_EXPECTATIONS = {
    "pcie-x8-gpu1": ("finding", "pcie_link.width_degraded", 1),
    "remap-pending-gpu0": ("finding", "memory_errors.remap_pending", 0),
    "nvlink-inactive-gpu0": ("finding", "nvlink.link_inactive", 0),
    "gpu-lost-gpu1": ("finding", "driver.gpu_lost", 1),
    "hw-slowdown-busy-gpu0": ("verdict", "gpu_telemetry.hw_slowdown_busy", 0),
    "zero-watts-busy-gpu1": ("verdict", "gpu_telemetry.power_zero_busy", 1),
}


@pytest.mark.parametrize("name", sorted(FAULT_EXPECTATIONS))
def test_each_fault_gives_its_one_finding_on_its_gpu(name: str) -> None:
    report = run_bundle(FAULTS / name)
    assert above_ok(report) == [FAULT_EXPECTATIONS[name]]


def test_faults_are_all_covered() -> None:
    made = {p.name for p in FAULTS.iterdir() if p.is_dir()}
    assert made == set(FAULT_EXPECTATIONS) | {"busy-h200x2"}


def test_busy_h200_at_its_power_cap_is_healthy() -> None:
    report = run_bundle(FAULTS / "busy-h200x2")
    assert above_ok(report) == []
    for index in (0, 1):
        telemetry = facts_of(report, "gpu_telemetry", index)
        assert telemetry["util_gpu_pct"]["mean"] > 93
        assert 686 < telemetry["power_w"]["mean"] < 700
        assert telemetry["clock_reasons_seen"] == ["sw_power_cap"]
        assert telemetry["sm_clock_mhz"]["max"] < telemetry["sm_clock_max_mhz"]
        assert telemetry["violations_s"]["power"] == 2.9
        nvlink = facts_of(report, "nvlink", index)
        # CRC-data counters grow under load on healthy H200s: a rate, well under DCGM's limit
        assert nvlink["errors_delta"] == {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 79}
        assert 20 < nvlink["errors_per_s"]["crc_data"] < 100
    # the generation was judged (busy), not waved through as idle
    fired = {v.rule for v in report.verdicts if v.status != Status.OK}
    assert "pcie_link.gen_not_judged_idle" not in fired


def test_width_finding_names_every_form_of_evidence_and_the_share() -> None:
    report = run_bundle(FAULTS / "pcie-x8-gpu1")
    result = report.check("pcie_link")
    assert result is not None
    (finding,) = result.findings
    assert finding.device is not None and finding.device.pci_bus_id == "0000:00:07.0"
    assert "x8 of x16" in finding.message and "50%" in finding.message
    sources = {(e.source, e.ref) for e in finding.evidence}
    assert ("nvml", "nvmlDeviceGetCurrPcieLinkWidth") in sources
    assert ("sysfs", "devices/pci0000:00/0000:00:07.0/current_link_width") in sources
    assert finding.action


def test_remap_pending_says_reset_and_lost_gpu_is_not_judged_elsewhere() -> None:
    remap = run_bundle(FAULTS / "remap-pending-gpu0").check("memory_errors")
    assert remap is not None
    (finding,) = remap.findings
    assert "reset" in (finding.action or "")
    lost = run_bundle(FAULTS / "gpu-lost-gpu1")
    for name in GPU_CHECKS[1:]:
        result = lost.check(name)
        assert result is not None and result.status == Status.OK
        assert any(n.startswith("GPU 1:") and "lost" in n for n in result.not_judged), name


# --- the same faults seen through nvidia-smi only ----------------------------------------------

SMI_VISIBLE = {
    "pcie-x8-gpu1": ("finding", "pcie_link.width_degraded", 1),
    "gpu-lost-gpu1": ("finding", "driver.gpu_lost", 1),
    "hw-slowdown-busy-gpu0": ("verdict", "gpu_telemetry.hw_slowdown_busy", 0),
    "zero-watts-busy-gpu1": ("verdict", "gpu_telemetry.power_zero_busy", 1),
}


@pytest.mark.parametrize("name", sorted(SMI_VISIBLE))
def test_faults_nvidia_smi_shows_are_found_without_nvml(name: str, tmp_path: Path) -> None:
    report = run_bundle(nvidia_smi_only(FAULTS / name, tmp_path))
    assert above_ok(report) == [SMI_VISIBLE[name]]
    telemetry = report.check("gpu_telemetry")
    assert telemetry is not None and telemetry.facts["source"] == "nvidia-smi"


def test_idle_and_busy_stay_healthy_without_nvml(tmp_path: Path) -> None:
    for bundle in (IDLE, FAULTS / "busy-h200x2"):
        assert above_ok(run_bundle(nvidia_smi_only(bundle, tmp_path))) == []


# --- bundles holding only the CSV query --------------------------------------------------------


def test_csv_only_idle_h200_judges_what_the_csv_shows() -> None:
    report = run_bundle(CSV_BUNDLES / "csv-only-h200-idle")
    assert above_ok(report) == []
    pcie = facts_of(report, "pcie_link", 1)
    assert (pcie["source"], pcie["width_current"], pcie["width_max"]) == ("nvidia-smi", 16, 16)
    assert pcie["width_degraded"] is False
    telemetry = facts_of(report, "gpu_telemetry", 0)
    assert telemetry["samples"] == 1 and telemetry["power_w"]["mean"] == 78.54
    assert telemetry["power_limit_w"] == 700.0
    memory = facts_of(report, "memory_errors", 0)
    assert memory["ecc_volatile_uncorrected"] == 0
    notes = {name: report.check(name).not_judged for name in GPU_CHECKS}  # type: ignore[union-attr]
    assert any("PCIe replay rate" in n or "PCIe replay counter" in n for n in notes["pcie_link"])
    assert any("GPM metrics: needs NVML" in n for n in notes["gpu_telemetry"])
    assert any("NVLink" in n for n in notes["nvlink"])
    assert any("row remap pending" in n for n in notes["memory_errors"])
    assert any("recovery action" in n for n in notes["driver"])


def test_csv_only_loaded_h100_judges_the_link_generation_because_busy() -> None:
    report = run_bundle(CSV_BUNDLES / "csv-only-h100-load")
    assert above_ok(report) == []
    telemetry = facts_of(report, "gpu_telemetry", 0)
    assert telemetry["util_gpu_pct"]["mean"] == 100.0
    assert telemetry["power_w"]["mean"] == 631.95
    assert telemetry["clock_reasons_seen"] == []
    pcie = facts_of(report, "pcie_link", 0)
    assert pcie["gen_below_max"] is False
    memory = facts_of(report, "memory_errors", 0)
    assert memory["remap_pending"] is False and memory["remap_histogram"]["max"] == 2560
    result = report.check("memory_errors")
    assert result is not None
    assert any("retired pages: not supported" in n for n in result.not_judged)
    assert "retired_sbe" not in memory  # not supported is never zero


def test_csv_without_index_or_limits_lists_what_it_could_not_judge() -> None:
    report = run_bundle(CSV_BUNDLES / "csv-only-a100x8-sparse")
    assert above_ok(report) == []
    driver = report.check("driver")
    assert driver is not None and driver.facts["gpu_count"] == 8
    pcie = report.check("pcie_link")
    telemetry = report.check("gpu_telemetry")
    assert pcie is not None and telemetry is not None
    assert "GPUs 0-7: PCIe link width (nvidia-smi): not in the evidence" in pcie.not_judged
    assert any(n.startswith("GPUs 0-7: power against its limit") for n in telemetry.not_judged)
    assert facts_of(report, "gpu_telemetry", 3)["temp_c"]["max"] == 32.0


def test_a_profile_tdp_and_site_params_drive_the_csv_judgements(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "profiles").mkdir(parents=True)
    (site / "profiles" / "a100-test.yaml").write_text("name: a100-test\ntdp_w: 400\n")
    (site / "params.yaml").write_text("params:\n  temp_slowdown_fallback_c: 31\n")
    report = run_bundle(
        CSV_BUNDLES / "csv-only-a100x8-sparse", profile="a100-test", rules_dirs=[site]
    )
    low = [(k, c, i) for k, c, i in above_ok(report) if c == "gpu_telemetry.power_low_busy"]
    assert low == [("verdict", "gpu_telemetry.power_low_busy", i) for i in range(1, 8)]
    hot = [i for _, c, i in above_ok(report) if c == "gpu_telemetry.temp_at_slowdown"]
    assert hot == [3, 5, 7]  # 32, 31, 32 °C against the site's 31 °C
    assert len(above_ok(report)) == 10


# --- a real loaded bundle (recorded on the lent 2×H200 machine with `collect --load`) --------


def test_recorded_loaded_h200s_are_healthy() -> None:
    report = run_bundle(CSV_BUNDLES / "h200x2-load-v0")
    assert above_ok(report) == []
    for index in (0, 1):
        telemetry = facts_of(report, "gpu_telemetry", index)
        assert telemetry["util_gpu_pct"]["mean"] >= 98
        assert 680 < telemetry["power_w"]["mean"] <= 700
        assert telemetry["clock_reasons_seen"] == ["sw_power_cap"]
        assert telemetry["sm_clock_mhz"]["max"] < telemetry["sm_clock_max_mhz"]
        assert telemetry["tensor_active_pct"]["mean"] > 80  # GPM under a bf16 GEMM
        nvlink = facts_of(report, "nvlink", index)
        # real H200s grow CRC-data counters under load: not a finding, far below DCGM's 100/s
        assert nvlink["errors_delta"]["crc_data"] > 0
        assert nvlink["errors_delta"]["replay"] == nvlink["errors_delta"]["recovery"] == 0
        assert nvlink["errors_per_s"]["crc_data"] < 20
    fired = {v.rule for v in report.verdicts if v.status != Status.OK}
    assert "pcie_link.gen_not_judged_idle" not in fired
