"""The `multigpu` check over records of the multi-GPU phase: how each rank ended and whether
its checked sums were right. Ranks waiting for one that failed are not a hang; a collective
every rank hung in is one node finding; NCCL missing is UNKNOWN with its reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from multigpu_bundles import allreduce, eight_h200, multigpu_record, read_multigpu, write_multigpu
from sitscheck.app import RunRequest, execute
from sitscheck.checks.multigpu.judge import judge
from sitscheck.config import RunConfig
from sitscheck.contract import CheckOutput
from sitscheck.contract.phase_record import parse_record
from sitscheck.models import Severity, Status
from sitscheck.probes.nccl import STARTING

GPUS = [{"index": i, "uuid": f"GPU-0000000{i}", "pci_bus_id": f"00000000:{0x18 + i:02x}:00.0",
         "name": "NVIDIA H200"} for i in range(8)]  # fmt: skip


def healthy() -> dict[str, Any]:
    return multigpu_record(GPUS, allreduce(8, 475.0))


def judged(data: dict[str, Any]) -> CheckOutput:
    return judge(parse_record(json.dumps(data)))


def set_status(data: dict[str, Any], index: int, status: str, reason: str) -> None:
    entry = data["gpus"][index]
    entry.update(status=status, reason=reason)
    if status != "ok":
        entry["result"] = None


def test_every_rank_ok_with_right_sums_passes() -> None:
    out = judged(healthy())
    assert out.findings == [] and out.error is None and out.not_judged == []
    assert out.facts["engine"] == "torch" and out.facts["nccl_version"] == "2.28.9"
    assert [(g["gpu"], g["rank"], g["status"], g["wrong_elements"]) for g in out.facts["gpus"]] == [
        (i, i, "ok", 0) for i in range(8)
    ]


def test_no_nccl_is_unknown_with_the_reason() -> None:
    reason = "PyTorch is not installed (No module named 'torch')"
    out = judged(multigpu_record(GPUS, None, reason))
    assert out.findings == []
    assert out.error == f"NCCL all-reduce not measured: {reason}"


def test_ranks_waiting_for_a_failed_one_are_no_hang() -> None:
    data = healthy()
    set_status(data, 3, "failed", "NCCL error: unhandled cuda error")
    for index in (0, 1, 2, 4, 5, 6, 7):
        set_status(data, index, "hung", "stopped responding while nccl: joining 8 ranks; killed")
    data["result"] = {"nccl": None, "nccl_reason": "no rank finished the all-reduce"}
    out = judged(data)
    assert out.findings == []
    assert out.error is not None
    assert out.error.startswith("GPU 3: failed: NCCL error: unhandled cuda error")
    assert "GPU(s) 0, 1, 2, 4, 5, 6, 7 waited for them" in out.error


def test_ranks_still_starting_at_the_phases_end_are_no_hang() -> None:
    data = healthy()
    for index in range(8):
        set_status(data, index, "hung", "stopped responding while nccl: joining 8 ranks; killed")
        data["gpus"][index]["doing"] = "nccl: joining 8 ranks"
    data["gpus"][6].update(doing=STARTING, reason=f"stopped responding while {STARTING}; killed")
    data["result"] = {"nccl": None, "nccl_reason": "no rank finished the all-reduce"}
    out = judged(data)
    assert out.findings == []
    assert out.error == (
        "GPU 6: still starting (PyTorch, CUDA) at the phase's end: killed (a larger --budget "
        "gives it time); GPU(s) 0, 1, 2, 3, 4, 5, 7 waited for them and were killed at the "
        "phase's end"
    )


def test_a_collective_every_rank_hung_in_is_one_node_finding() -> None:
    data = healthy()
    why = "stopped responding while nccl: all-reduce, 20 timed of 17179869184 bytes; killed"
    for index in range(8):
        set_status(data, index, "hung", why)
    data["result"] = {"nccl": None, "nccl_reason": "no rank finished the all-reduce"}
    out = judged(data)
    assert out.error is None
    (finding,) = out.findings
    assert (finding.code, finding.severity, finding.device) == (
        "multigpu.workload_hung", Severity.CRITICAL, None
    )  # fmt: skip
    assert finding.message == f"GPUs 0, 1, 2, 3, 4, 5, 6, 7: NCCL's all-reduce over them {why}"


def test_a_rank_that_never_joined_and_the_ranks_waiting_for_it_are_one_node_finding() -> None:
    data = healthy()
    never = "stopped responding while nccl: a rank that never joins (test-only --inject hang)"
    waiting = "stopped responding while nccl: joining 8 ranks; killed"
    for index in range(8):
        set_status(data, index, "hung", f"{never}; killed" if index == 1 else waiting)
    (finding,) = judged(data).findings
    assert finding.device is None
    assert finding.message == (
        "GPUs 0, 1, 2, 3, 4, 5, 6, 7: NCCL's all-reduce over them stopped responding "
        f"(GPU 0, 2, 3, 4, 5, 6, 7: {waiting}; GPU 1: {never}; killed)"
    )


def test_a_rank_that_hung_after_the_others_finished_names_its_gpu() -> None:
    data = healthy()
    set_status(data, 5, "hung", "stopped responding while nccl: all-reduce, checking the sums; "
               "killed")  # fmt: skip
    out = judged(data)
    (finding,) = out.findings
    assert finding.code == "multigpu.workload_hung" and finding.device is not None
    assert finding.device.index == 5 and finding.device.uuid == GPUS[5]["uuid"]
    assert out.error is None


def test_wrong_sums_are_critical_for_that_gpu() -> None:
    data = healthy()
    data["gpus"][3]["result"]["wrong_elements"] = 12
    out = judged(data)
    (finding,) = out.findings
    assert (finding.code, finding.severity) == ("multigpu.allreduce_wrong", Severity.CRITICAL)
    assert finding.device is not None and finding.device.index == 3
    assert finding.message.startswith("GPU 3: 12 element(s) of a checked all-reduce of "
                                      "17179869184 bytes over 8 GPUs")  # fmt: skip
    assert out.facts["gpus"][3]["wrong_elements"] == 12


@pytest.mark.parametrize(
    ("status", "reason"),
    [("interrupted", "stopped by a signal while nccl: joining 8 ranks"),
     ("not_run", "not run: xid.79 (critical) before the phase: fell off the bus")],
)  # fmt: skip
def test_an_interrupted_or_unrun_rank_is_unknown(status: str, reason: str) -> None:
    data = healthy()
    set_status(data, 7, status, reason)
    out = judged(data)
    assert out.findings == [] and out.error == f"GPU 7: {status}: {reason}"


def test_a_figure_of_another_shape_is_not_a_pass() -> None:
    data = healthy()
    data["result"]["nccl"] = {**data["result"]["nccl"], "bus_gbs": "475"}
    assert judged(data).error == (
        "NCCL all-reduce not measured: the record holds no figure of the shape expected"
    )


def test_a_phase_planned_out_skips_the_check_and_a_hung_board_is_critical(
    tmp_path: Path,
) -> None:
    bundle = eight_h200(tmp_path)
    data = read_multigpu(bundle)
    write_multigpu(bundle, {**data, "skipped": "not applicable: one GPU", "gpus": [],
                            "result": None})  # fmt: skip
    config = RunConfig(checks=["bandwidth", "multigpu"], profile="h200-sxm")
    result = execute(RunRequest(config, str(bundle))).check("multigpu")
    assert result is not None and result.status == Status.SKIPPED
    assert result.skip_reason == "not applicable: one GPU"
    for entry in data["gpus"]:
        entry.update(status="hung", reason="stopped responding while nccl: joining 8 ranks; "
                     "killed", result=None)  # fmt: skip
    write_multigpu(bundle, {**data, "result": {"nccl": None, "nccl_reason": "no rank finished"}})
    report = execute(RunRequest(config, str(bundle)))
    result = report.check("multigpu")
    assert result is not None and result.status == Status.CRITICAL
    assert [f.code for f in result.findings] == ["multigpu.workload_hung"]
    bandwidth = report.check("bandwidth")
    assert bandwidth is not None and bandwidth.facts["nccl"] is None
