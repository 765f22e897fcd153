"""The bandwidth check and rules over recorded bundles: healthy as recorded, and each injected
fault raises its own finding and nothing else.

The recorded H200 (tests/bundles/h200x1-bandwidth-v1) and the recorded 2×H200 node with that
GPU's figures (bandwidth_bundles.two_gpus); faults injected into those: one GPU's
host→device copies at 60 % of what its link should give; two GPUs behind one PCIe switch
whose concurrent copies share its uplink, each getting half of what one H200's Gen5 x16 link
was measured to carry with two copy streams on it
(tests/corpus/bandwidth/two-streams-one-link.json: tools/device/bandwidth_paths.py 2).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from bandwidth_bundles import (
    CORPUS,
    RECORDED,
    RULE_FILE,
    SWITCH_UP,
    behind_one_port,
    params,
    record,
    set_concurrent,
    set_h2d,
    two_gpus,
    write_record,
)
from sitscheck.app import RunRequest, execute
from sitscheck.checks.bandwidth.expect import pcie_gbs
from sitscheck.checks.pcie_link.links import parse_gen, parse_width
from sitscheck.config import RunConfig
from sitscheck.models import Report, Severity, Status


def load_ruleset_params() -> dict[str, Any]:
    """Every built-in rule file's params, as a run merges them."""
    merged: dict[str, Any] = {}
    for path in sorted(RULE_FILE.parent.glob("*.yaml")):
        merged.update(yaml.safe_load(path.read_text()).get("params") or {})
    return merged


def replay(path: Path) -> Report:
    return execute(RunRequest(RunConfig(), str(path)))


def above_ok(report: Report) -> list[tuple[str, str]]:
    return [
        (c.name, f.code)
        for c in report.checks
        for f in c.findings
        if f.severity in (Severity.WARNING, Severity.CRITICAL, Severity.UNKNOWN)
    ] + [(v.rule, v.message) for v in report.verdicts if v.status.rank > Status.OK.rank]


def fired_info(report: Report, rule: str) -> list[str]:
    """Messages of a node rule that fired: one that did not fire reads its description."""
    rules = yaml.safe_load(RULE_FILE.read_text())["rules"]
    description = str(next(r for r in rules if r["id"] == rule)["description"]).strip()
    return [v.message for v in report.verdicts if v.rule == rule and v.message != description]


def shown(value: float) -> str:
    """A number as rule messages print it (one decimal, trailing zeros dropped)."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def facts(report: Report) -> dict[str, Any]:
    result = report.check("bandwidth")
    assert result is not None
    return result.facts


@pytest.fixture(scope="module")
def shared_link() -> list[float]:
    """Two GPUs' host→device figures when one Gen5 x16 link carries both: the link's
    measured aggregate with two copy streams on it (all bytes over the wall time; the two
    streams' own events would overlap, one GPU's copy engine runs them in turn), halved."""
    data = json.loads((CORPUS / "two-streams-one-link.json").read_text())
    aggregate = float(data["concurrent"]["wall_gbs"])
    return [round(aggregate / 2, 2)] * 2


def test_the_recorded_h200_replays_healthy_with_its_figures() -> None:
    report = replay(RECORDED)
    assert above_ok(report) == []
    assert report.status == Status.OK
    result = report.check("bandwidth")
    assert result is not None and result.status == Status.OK
    measured = record(RECORDED)["gpus"][0]
    gpu = facts(report)["gpus"][0]
    assert gpu["index"] == 0 and gpu["uuid"] == measured["uuid"]
    assert gpu["h2d_gbs"] == measured["h2d"]["gbs"]
    assert gpu["d2h_gbs"] == measured["d2h"]["gbs"]
    assert gpu["hbm_gbs"] == measured["hbm_gbs"]
    folder = RECORDED / "sysfs" / "devices" / "pci0000:00" / measured["pci_bus_id"]
    gen = parse_gen((folder / "max_link_speed").read_text())
    width = parse_width((folder / "max_link_width").read_text())
    assert (gpu["pcie_gen"], gpu["pcie_width"]) == (gen, width)
    assert gpu["pcie_theoretical_gbs"] == pcie_gbs(gen or 0, width or 0)
    assert facts(report)["probe"]["elapsed_s"] == record(RECORDED)["elapsed_s"]


def test_two_recorded_h200s_with_nvlink_peers_replay_healthy(tmp_path: Path) -> None:
    report = replay(two_gpus(tmp_path))
    assert above_ok(report) == []
    pairs = facts(report)["pairs"]
    assert [p["label"] for p in pairs] == ["GPU0→GPU1", "GPU1→GPU0"]
    nvml = json.loads((tmp_path / "h200x2-bandwidth" / "nvml.json").read_text())
    links = sum(1 for link in nvml["gpus"][0]["nvlink"] if link["active"])
    assert {(p["via"], p["nvlinks"]) for p in pairs} == {("nvlink", links)}
    assert facts(report)["shared_ports"] == []


def test_a_pair_at_half_its_nvlink_expectation_is_low(tmp_path: Path) -> None:
    bundle = two_gpus(tmp_path)
    p = params()
    profile = yaml.safe_load((RULE_FILE.parent / "profiles" / "h200-sxm.yaml").read_text())
    rate = profile["nvlink"]["link_gbs_per_direction"]
    expected = p["bandwidth_nvlink_typical_fraction"] * 18 * rate
    data = record(bundle)
    data["p2p"][1]["gbs"] = round(expected / 2, 2)
    write_record(bundle, data)
    report = replay(bundle)
    assert [x[0] for x in above_ok(report)] == ["bandwidth.p2p_nvlink_low"]
    verdict = next(v for v in report.verdicts if v.rule == "bandwidth.p2p_nvlink_low")
    assert verdict.message.startswith("1 GPU pair(s)")
    # a whole double prints as 180 or 180.0 by CEL engine: the number, not its spelling
    shown = re.search(r"GPU1→GPU0: ([0-9.]+) GB/s over 18 NVLinks", verdict.message)
    assert shown is not None and float(shown.group(1)) == round(expected / 2, 2)


def test_host_to_device_at_60_percent_of_expected_on_one_gpu(tmp_path: Path) -> None:
    bundle = two_gpus(tmp_path)
    expected = params()["bandwidth_pcie_typical_fraction"] * pcie_gbs(5, 16)
    set_h2d(bundle, 1, round(0.6 * expected, 2))
    report = replay(bundle)
    problems = above_ok(report)
    # 45 % below the other GPU's figure too: a straggler (rules/acceptance.yaml)
    rules = ["bandwidth.h2d_low", "straggler.h2d_bandwidth_critical"]
    assert sorted(p[0] for p in problems) == rules, problems
    verdict = next(v for v in report.verdicts if v.rule == "bandwidth.h2d_low" and v.device)
    assert verdict.status == Status.WARNING and verdict.device.index == 1
    assert f"host→device {shown(0.6 * expected)} GB/s" in verdict.message
    assert f"expected about {shown(expected)} GB/s" in verdict.message
    assert "60 %" in verdict.message
    assert report.status == Status.CRITICAL


def test_a_figure_just_above_the_floor_is_not_low(tmp_path: Path) -> None:
    bundle = two_gpus(tmp_path)
    p = params()
    floor = p["bandwidth_min_of_expected"] * p["bandwidth_pcie_typical_fraction"] * 63.0
    for gpu in (0, 1):  # both: one GPU this far below the other is a straggler
        set_h2d(bundle, gpu, round(floor + 0.05, 2))
    assert above_ok(replay(bundle)) == []
    set_h2d(bundle, 1, round(floor - 0.05, 2))
    assert [p[0] for p in above_ok(replay(bundle))] == ["bandwidth.h2d_low"]


def test_two_gpus_capped_by_one_shared_port(tmp_path: Path, shared_link: list[float]) -> None:
    bundle = two_gpus(tmp_path)
    behind_one_port(bundle, shared_link)
    report = replay(bundle)
    assert above_ok(report) == []
    shared = facts(report)["shared_ports"]
    assert [(s["port"], s["gpus"]) for s in shared] == [(SWITCH_UP, [0, 1])]
    assert shared[0]["together_gbs"] == round(sum(shared_link), 2)
    capped = fired_info(report, "bandwidth.shared_port_capped")
    assert len(capped) == 1
    assert f"GPU0, GPU1 share upstream port {SWITCH_UP}" in capped[0]
    assert fired_info(report, "bandwidth.shared_port_low") == []


def test_gpus_behind_one_port_that_each_keep_their_figure_are_not_capped(
    tmp_path: Path,
) -> None:
    bundle = two_gpus(tmp_path)
    alone = [g["h2d"]["gbs"] for g in record(bundle)["gpus"]]
    behind_one_port(bundle, alone)
    report = replay(bundle)
    assert above_ok(report) == []
    assert facts(report)["shared_ports"][0]["ratio"] == 1.0
    assert fired_info(report, "bandwidth.shared_port_capped") == []


def test_a_shared_uplink_below_its_own_link_is_a_warning(
    tmp_path: Path, shared_link: list[float]
) -> None:
    bundle = two_gpus(tmp_path)
    behind_one_port(bundle, [v / 2 for v in shared_link])  # the uplink trained at half
    report = replay(bundle)
    assert [p[0] for p in above_ok(report)] == ["bandwidth.shared_port_low"]
    verdict = next(v for v in report.verdicts if v.rule == "bandwidth.shared_port_low")
    assert SWITCH_UP in verdict.message and verdict.status == Status.WARNING


def test_a_failed_probe_is_unknown_with_its_reason(tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    shutil.copytree(RECORDED, bundle)
    data = record(bundle)
    data["gpus"] = []
    data["errors"] = ["cuInit failed: CUDA_ERROR_NO_DEVICE (100)"]
    write_record(bundle, data)
    report = replay(bundle)
    result = report.check("bandwidth")
    assert result is not None and result.status == Status.UNKNOWN
    assert "CUDA_ERROR_NO_DEVICE" in (result.error or "")
    assert report.status == Status.UNKNOWN
    verdicts = {v.rule: v.status for v in report.verdicts if v.rule.startswith("bandwidth.")}
    assert set(verdicts.values()) == {Status.UNKNOWN}


def test_a_copy_that_returned_other_data_is_critical(tmp_path: Path) -> None:
    bundle = two_gpus(tmp_path)
    data = record(bundle)
    data["gpus"][0]["local_verified"] = False
    write_record(bundle, data)
    report = replay(bundle)
    assert above_ok(report) == [("bandwidth", "bandwidth.copy_mismatch")]
    assert report.status == Status.CRITICAL


def test_a_bundle_without_bandwidth_is_skipped_not_judged() -> None:
    report = replay(RECORDED.parent / "h200x2-idle-v1")
    result = report.check("bandwidth")
    assert result is not None and result.status == Status.SKIPPED
    assert "bandwidth.json" in (result.skip_reason or "")
    assert {v.status for v in report.verdicts if v.rule.startswith("bandwidth.")} == {
        Status.SKIPPED
    }


def test_concurrent_figures_do_not_judge_gpus_that_share_no_port(tmp_path: Path) -> None:
    bundle = two_gpus(tmp_path)
    set_concurrent(bundle, [10.0, 10.0])
    report = replay(bundle)
    assert above_ok(report) == []
    assert [g["h2d_concurrent_gbs"] for g in facts(report)["gpus"]] == [10.0, 10.0]
