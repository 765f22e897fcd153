"""The multi-GPU phase's runner (`accept.multigpu.run_multigpu`) with stand-in ranks
(tests/fakes/fake_rank.py, which read their options with the real rank's code): every rank
sees every GPU of the phase, the ranks meet in a folder of the phase's own that is gone
afterwards, the operator's NCCL settings reach them unchanged and nothing is forced, a rank
that hangs is killed at the phase's deadline and reaped, and every way of not running is in
the record with its reason."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes.procs import JumpClock
from sitscheck.accept import multigpu
from sitscheck.accept.multigpu import MIN_PHASE_S, PASSED_ON, RESERVE_S, run_multigpu
from sitscheck.accept.phases import Injection, PhaseContext, record_name, run_plan
from sitscheck.accept.plan import Plan, PlannedPhase
from sitscheck.workloads.children import Target
from sitscheck.workloads.gpus import NodeGpus

FAKE = "fakes.fake_rank"
UUIDS = ("GPU-2b73ad72-0000", "GPU-2cc8f644-0001", "GPU-83543b48-0002")


def context(
    count: int,
    stopped: Callable[[], bool] = lambda: False,
    clock: Callable[[], float] = time.monotonic,
    **extra: Any,
) -> PhaseContext:
    gpus = NodeGpus(None)  # no NVML: the stand-in ranks need only the targets
    gpus.targets = [
        Target(i, UUIDS[i], f"00000000:{7 + i:02x}:00.0", "NVIDIA H200") for i in range(count)
    ]
    return PhaseContext(gpus=gpus, began=clock(), stopped=stopped, engine="auto", clock=clock,
                        **extra)  # fmt: skip


def phase(count: int, seconds: float = 30.0) -> PlannedPhase:
    return PlannedPhase("multigpu", 0.0, seconds, seconds / 2, 0.0, tuple(range(count)))


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No NCCL settings, no stand-in behaviour, and phases of seconds allowed (the stand-in
    ranks start in a fraction of one)."""
    for key in list(os.environ):
        if key.startswith((*PASSED_ON, "SITSCHECK_TEST_RANK_")):
            monkeypatch.delenv(key)
    monkeypatch.setattr(multigpu, "MIN_PHASE_S", 1.0)
    return monkeypatch


def seen(fields: dict[str, Any], index: int) -> dict[str, Any]:
    entry = next(g for g in fields["gpus"] if g["index"] == index)
    return dict(entry["result"]["seen"])


def test_every_rank_sees_every_gpu_and_the_ranks_meet_in_the_phases_own_folder(
    clean_env: pytest.MonkeyPatch,
) -> None:
    fields = run_multigpu(phase(3), context(3), module=FAKE)
    assert [(g["index"], g["status"]) for g in fields["gpus"]] == [(0, "ok"), (1, "ok"), (2, "ok")]
    assert fields["engine"] == "torch"
    folders = set()
    for index in range(3):
        got = seen(fields, index)
        assert got["visible"] == ",".join(UUIDS)  # in rank order: rank r works on the r-th
        args = got["args"]
        assert args[args.index("--rank") + 1] == str(index)
        assert args[args.index("--world") + 1] == "3"
        # its time: the phase's, to its deadline, less what printing and reaping take
        assert 0 < float(args[args.index("--seconds") + 1]) <= 30.0 - RESERVE_S
        assert "--inject" not in args
        assert got["folder_mode"] == 0o700
        folders.add(got["folder"])
    (folder,) = folders  # one rendezvous for all the ranks ...
    assert not os.path.exists(folder)  # ... removed with the phase
    nccl = fields["result"]["nccl"]
    assert fields["result"]["nccl_reason"] is None
    assert nccl["ranks"] == 3 and nccl["op"] == "all_reduce"


def test_the_operators_nccl_settings_reach_the_ranks_unchanged(
    clean_env: pytest.MonkeyPatch,
) -> None:
    settings = {"NCCL_NVLS_ENABLE": "0", "NVSHMEM_DISABLE_NVLS": "1",
                "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NCCL_DEBUG": "WARN"}  # fmt: skip
    for key, value in settings.items():
        clean_env.setenv(key, value)
    clean_env.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=secret")
    fields = run_multigpu(phase(2), context(2), module=FAKE)
    for index in (0, 1):
        assert seen(fields, index)["passed"] == settings
        assert seen(fields, index)["secret"] is False
    assert fields["result"]["nccl"]["nvls_disabled"] is True


def test_on_a_customers_node_nccl_keeps_its_defaults(clean_env: pytest.MonkeyPatch) -> None:
    fields = run_multigpu(phase(2), context(2), module=FAKE)
    assert seen(fields, 0)["passed"] == {}  # nothing forced: no NCCL_NVLS_ENABLE, no other
    assert fields["result"]["nccl"]["nvls_disabled"] is False


def test_inject_hang_reaches_the_rank_of_that_gpu_alone_killed_at_the_deadline_and_reaped(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`--inject hang:1`: rank 1 alone hangs (rank 0's arguments carry no injection). The
    phase's clock passes its deadline once both ranks have said their last line: rank 1 is
    hung, named with what it did, killed and reaped; rank 0's figure stands."""
    clean_env.setenv("SITSCHECK_TEST_RANK_MARKS", str(tmp_path))
    clock = JumpClock(lambda: all((tmp_path / f"rank{r}.said").exists() for r in (0, 1)))
    ctx = context(2, injections=(Injection("hang", 1),), clock=clock)
    fields = run_multigpu(phase(2), ctx, module=FAKE)
    assert clock.jumped  # the phase ended at its deadline, not before
    assert "--inject" not in seen(fields, 0)["args"]
    assert [g["status"] for g in fields["gpus"]] == ["ok", "hung"]
    hung = fields["gpus"][1]
    assert hung["reason"].startswith("stopped responding while nccl: all-reduce (pid")
    pid = int(re.search(r"pid (\d+)", hung["reason"]).group(1))  # type: ignore[union-attr]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped: no such process, not even a zombie
    assert fields["result"]["nccl"] is not None  # rank 0's, which finished


def test_a_failed_rank_is_failed_with_its_reason(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("SITSCHECK_TEST_RANK_0", "fail")
    fields = run_multigpu(phase(2), context(2), module=FAKE)
    failed = fields["gpus"][0]
    assert (failed["status"], failed["reason"]) == (
        "failed", "NCCL error: unhandled cuda error (a test's)"
    )  # fmt: skip


def test_ranks_without_nccl_leave_the_figure_null_with_their_reason(
    clean_env: pytest.MonkeyPatch,
) -> None:
    for rank in (0, 1):
        clean_env.setenv(f"SITSCHECK_TEST_RANK_{rank}", "no-nccl")
    fields = run_multigpu(phase(2), context(2), module=FAKE)
    assert [g["status"] for g in fields["gpus"]] == ["ok", "ok"]
    assert fields["result"] == {"nccl": None, "nccl_reason": "PyTorch is not installed (a test's)"}


def test_a_blocked_gpu_leaves_one_and_no_rank_starts(clean_env: pytest.MonkeyPatch) -> None:
    why = "not run: xid.79 (critical) before the phase: GPU 1 fell off the bus"
    fields = run_multigpu(phase(2), context(2, blocked={1: why}), module=FAKE)
    assert [(g["index"], g["status"]) for g in fields["gpus"]] == [(0, "not_run"), (1, "not_run")]
    assert fields["gpus"][1]["reason"] == why
    assert "fewer than two GPUs" in fields["gpus"][0]["reason"]
    assert fields["result"]["nccl"] is None and fields["engine"] is None


def test_a_phase_too_short_for_nccls_start_up_starts_no_rank(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A budget that leaves the phase less than MIN_PHASE_S: the ranks would be killed while
    starting (a false hang); not run, with the reason."""
    fields = run_multigpu(phase(2, seconds=MIN_PHASE_S - 1), context(2), module=FAKE)
    assert [g["status"] for g in fields["gpus"]] == ["not_run", "not_run"]
    assert fields["gpus"][0]["reason"].startswith("not run: the phase's")
    assert "a larger --budget" in fields["result"]["nccl_reason"]


def test_a_stop_marks_the_ranks_interrupted_and_reads_memory_after(
    clean_env: pytest.MonkeyPatch,
) -> None:
    fields = run_multigpu(phase(2), context(2, stopped=lambda: True), module=FAKE)
    assert [g["status"] for g in fields["gpus"]] == ["interrupted", "interrupted"]
    assert "memory_after_stop" in fields
    assert fields["result"]["nccl"] is None


def test_the_plan_writes_the_phases_record_with_its_header(clean_env: pytest.MonkeyPatch) -> None:
    ctx = context(2)
    plan = Plan(60.0, (phase(2),))
    records = run_plan(plan, ctx, {"multigpu": lambda p: run_multigpu(p, ctx, module=FAKE)})
    record = json.loads(records[record_name("multigpu")])
    assert (record["format"], record["phase"], record["skipped"]) == (
        "sitscheck-accept", "multigpu", None
    )  # fmt: skip
    assert record["result"]["nccl"]["ranks"] == 2 and len(record["gpus"]) == 2
