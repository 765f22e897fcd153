"""NCCL's all-reduce in the bandwidth check (`nccl`) and its rules (rules/bandwidth.yaml),
over an 8x H200 node composed from real recordings (tests/multigpu_bundles.py) and the
recorded 2x H200: a healthy board's figure passes, a board below the profile's floor is
critical, with NVLink SHARP switched off or on fewer GPUs the rings' floor holds instead, and a
profile without floors judges nothing; the board's peer-to-peer matrix, pair by pair."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from bandwidth_bundles import RULE_FILE, record, two_gpus, write_record
from multigpu_bundles import (
    HEALTHY_BUS_GBS,
    RING_BUS_GBS,
    eight_h200,
    multigpu_record,
    nvml_gpus,
    with_allreduce,
    write_multigpu,
)
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.models import Report, Severity, Status

BOARD = "bandwidth.nccl_allreduce_low"
RING = "bandwidth.nccl_allreduce_ring_low"
FLOORS: dict[str, Any] = yaml.safe_load(
    (RULE_FILE.parent / "profiles" / "h200-sxm.yaml").read_text()
)["nccl"]


def replay(path: Path, profile: str = "h200-sxm") -> Report:
    config = RunConfig(checks=["bandwidth", "multigpu"], profile=profile)
    return execute(RunRequest(config, str(path)))


def fired(report: Report) -> dict[str, str]:
    """The NCCL rules that fired (rule -> message)."""
    return {
        v.rule: v.message
        for v in report.verdicts
        if v.rule in (BOARD, RING) and v.status != Status.OK
    }


def nccl(report: Report) -> Any:
    result = report.check("bandwidth")
    assert result is not None
    return result.facts["nccl"]


def test_a_healthy_8x_h200_board_passes_and_its_figure_is_a_fact(tmp_path: Path) -> None:
    report = replay(eight_h200(tmp_path, HEALTHY_BUS_GBS))
    assert fired(report) == {}
    assert nccl(report) == {"op": "all_reduce", "bytes": 16 << 30, "bus_gbs": HEALTHY_BUS_GBS,
                            "ranks": 8, "nvls_disabled": False}  # fmt: skip
    assert {v.rule: v.status for v in report.verdicts if v.rule in (BOARD, RING)} == {
        BOARD: Status.OK, RING: Status.OK
    }  # fmt: skip
    for name in ("bandwidth", "multigpu"):
        result = report.check(name)
        assert result is not None and result.status == Status.OK, (name, result)
    bandwidth = report.check("bandwidth")
    assert bandwidth is not None and len(bandwidth.facts["pairs"]) == 56
    name = "sitscheck.nccl.allreduce.bus_bandwidth"
    metric = next(m for m in bandwidth.metrics if m.name == name)
    assert (metric.value, metric.labels) == (HEALTHY_BUS_GBS * 1e9, {"ranks": "8"})


def test_a_board_at_400_gbs_is_critical(tmp_path: Path) -> None:
    report = replay(eight_h200(tmp_path, 400.0))
    messages = fired(report)
    assert list(messages) == [BOARD]  # the rings' floor does not fire as well
    verdict = next(v for v in report.verdicts if v.rule == BOARD)
    assert verdict.status == Status.CRITICAL and verdict.device is None
    floor = FLOORS["all_reduce_bus_gbs_min"]
    assert messages[BOARD].startswith(
        f"NCCL all-reduce over 8 GPUs: bus bandwidth 400 GB/s ({16 << 30} bytes), below "
        f"h200-sxm's floor of {floor} GB/s with NCCL's defaults"
    )
    assert report.status == Status.CRITICAL


@pytest.mark.parametrize(("offset", "fires"), [(0.0, False), (-0.1, True)])
def test_the_board_floor_is_the_profiles(offset: float, fires: bool, tmp_path: Path) -> None:
    figure = round(FLOORS["all_reduce_bus_gbs_min"] + offset, 1)
    assert (BOARD in fired(replay(eight_h200(tmp_path, figure)))) is fires


def test_with_nvlink_sharp_off_a_healthy_board_is_judged_against_the_rings(
    tmp_path: Path,
) -> None:
    """The shared test machines run NCCL_NVLS_ENABLE=0: ~370 GB/s there is healthy, not
    below NHC's floor for NCCL's defaults."""
    assert RING_BUS_GBS < FLOORS["all_reduce_bus_gbs_min"]
    report = replay(eight_h200(tmp_path, RING_BUS_GBS, nvls_disabled=True))
    assert fired(report) == {}
    assert nccl(report)["nvls_disabled"] is True


def test_with_nvlink_sharp_off_a_slow_board_is_critical_against_the_rings(
    tmp_path: Path,
) -> None:
    report = replay(eight_h200(tmp_path, 300.0, nvls_disabled=True))
    messages = fired(report)
    assert list(messages) == [RING]
    floor = FLOORS["all_reduce_ring_bus_gbs_min"]
    assert f"below h200-sxm's floor of {floor} GB/s for rings" in messages[RING]
    assert next(v for v in report.verdicts if v.rule == RING).status == Status.CRITICAL


@pytest.mark.parametrize(("figure", "rules"), [(RING_BUS_GBS, []), (300.0, [RING])])
def test_two_gpus_are_judged_against_the_rings(
    figure: float, rules: list[str], tmp_path: Path
) -> None:
    bundle = with_allreduce(two_gpus(tmp_path), figure)
    report = replay(bundle)
    assert list(fired(report)) == rules
    assert nccl(report)["ranks"] == 2


def test_a_profile_without_floors_judges_no_figure(tmp_path: Path) -> None:
    report = replay(eight_h200(tmp_path, 100.0), profile="h100-sxm")
    assert fired(report) == {}
    assert {v.status for v in report.verdicts if v.rule in (BOARD, RING)} == {Status.OK}


def test_without_an_allreduce_the_fact_is_null_and_no_floor_is_judged(tmp_path: Path) -> None:
    report = replay(two_gpus(tmp_path))  # `run --bandwidth`: no multi-GPU record
    assert nccl(report) is None and fired(report) == {}
    multigpu = report.check("multigpu")
    assert multigpu is not None and multigpu.status == Status.SKIPPED


def test_without_nccl_the_multigpu_check_is_unknown_and_bandwidth_still_judged(
    tmp_path: Path,
) -> None:
    bundle = two_gpus(tmp_path)
    reason = "PyTorch is not installed (No module named 'torch')"
    write_multigpu(bundle, multigpu_record(nvml_gpus(bundle), None, reason))
    report = replay(bundle)
    multigpu = report.check("multigpu")
    assert multigpu is not None and multigpu.status == Status.UNKNOWN
    assert multigpu.error == f"NCCL all-reduce not measured: {reason}"
    bandwidth = report.check("bandwidth")
    assert bandwidth is not None and bandwidth.status == Status.OK and nccl(report) is None
    judged = {v.rule: v.status for v in report.verdicts if v.rule.startswith("bandwidth.")}
    assert judged["bandwidth.h2d_low"] == Status.OK  # the other figures are still judged
    assert all(f.severity != Severity.CRITICAL for f in bandwidth.findings)


def test_the_peer_matrix_of_eight_gpus_is_judged_pair_by_pair(tmp_path: Path) -> None:
    """The multi-GPU phase's peer-to-peer matrix is the bandwidth probe's: all 56 ordered
    pairs of the healthy board judged over their 18 NVLinks, quiet; one pair at half its
    figure is low; a pair that refuses peer access is a hole in the matrix, not a pass."""
    bundle = eight_h200(tmp_path)
    report = replay(bundle)
    bandwidth = report.check("bandwidth")
    assert bandwidth is not None
    assert {(p["via"], p["nvlinks"]) for p in bandwidth.facts["pairs"]} == {("nvlink", 18)}
    assert not [n for n in bandwidth.not_judged if "peer write" in n]
    quiet = {v.rule: v.status for v in report.verdicts if v.rule.startswith("bandwidth.p2p")}
    assert set(quiet.values()) == {Status.OK} and "bandwidth.p2p_refused" in quiet
    data = record(bundle)
    slow = next(p for p in data["p2p"] if (p["src"], p["dst"]) == (5, 2))
    slow["gbs"] = round(slow["gbs"] / 2, 2)
    data["p2p"] = [p for p in data["p2p"] if (p["src"], p["dst"]) != (3, 6)]
    data["p2p_refused"] = [{"src": 3, "dst": 6, "reason": "no peer access"}]
    write_record(bundle, data)
    report = replay(bundle)
    fired_now = {v.rule: v for v in report.verdicts if v.status != Status.OK and
                 v.rule.startswith("bandwidth.p2p")}  # fmt: skip
    assert sorted(fired_now) == ["bandwidth.p2p_nvlink_low", "bandwidth.p2p_refused"]
    assert "GPU5→GPU2" in fired_now["bandwidth.p2p_nvlink_low"].message
    refused = fired_now["bandwidth.p2p_refused"]
    assert refused.status == Status.WARNING
    assert refused.message.startswith("1 ordered GPU pair(s) refused peer access, first GPU3→GPU6")
