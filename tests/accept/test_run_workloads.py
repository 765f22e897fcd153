"""`sitscheck run --load` and `run --bandwidth` start declared workloads (`WorkloadSpec`) through
the runner every acceptance phase uses (`workloads.children`), on a node whose NVML is the recorded
2×H200's (tests/fakes/fake_pynvml.py) and whose workloads are `fake_workloads.behave` (no GPU).

What must hold: the load is the workload a check declares to keep the GPUs busy, one isolated
child per GPU, ready before the window opens and at work through it, stopped and reaped before
the bandwidth probe and when the run ends; a GPU it did not keep busy makes the telemetry check
UNKNOWN with the reason, live and replayed; the bandwidth record comes from the bandwidth
check's declared workload, on the GPUs it is given, and a probe that hangs is killed at its
deadline, its record missing with the reason.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import fake_workloads
import pytest
from fake_workloads.behave import BEHAVIOUR_VARIABLE
from fakes.fake_pynvml import FakePynvml, load_recording
from fakes.procs import JumpClock, still_running
from sitscheck.app import RunRequest, execute, installed_evidence
from sitscheck.config import RunConfig
from sitscheck.contract.declarations import WorkloadSpec
from sitscheck.probes.bandwidth import BANDWIDTH_JSON
from sitscheck.sources.command import CommandRunner
from sitscheck.sources.live import LiveOptions, LiveSources
from sitscheck.sources.nvml import Nvml
from sitscheck.workloads.bandwidth import run_probe
from sitscheck.workloads.children import Target
from sitscheck.workloads.load import start_load, visible_targets

MODULE = fake_workloads.MODULE
BUNDLE = Path(__file__).resolve().parent.parent / "bundles" / "h200x2-idle-v0"
RECORDING = load_recording(BUNDLE / "nvml.json")
UUIDS = [gpu["uuid"] for gpu in RECORDING["gpus"]]
SOAK = WorkloadSpec(phase="soak", module=MODULE, record="accept/soak.json", summary="fake",
                    share=None, order=30, keeps_busy=True, startup_s=60.0)  # fmt: skip
BANDWIDTH = WorkloadSpec(phase="bandwidth", module=MODULE, record=BANDWIDTH_JSON,
                         summary="fake", share=0.06, order=40)  # fmt: skip
WINDOW_S = 0.3
LOAD_S = WINDOW_S + 2.0  # the window and the run's margin (`app.live_options`)
# the children's warm-up before the window (power and clocks settling: none on a fake), and
# the runner's SIGTERM-to-SIGKILL grace (a child that outlives SIGTERM here ignores it)
WARMUP_S, GRACE_S = 0.0, 0.05
FAILED = "the --load workload (soak) failed: cuInit failed (fake): CUDA_ERROR_NO_DEVICE"


@pytest.fixture(autouse=True)
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return fake_workloads.prepare(tmp_path, monkeypatch)


def live(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    load_s: float | None = None,
    bandwidth_s: float | None = None,
    workloads: Sequence[WorkloadSpec] = (SOAK, BANDWIDTH),
) -> LiveSources:
    fake = FakePynvml(RECORDING)
    monkeypatch.setattr(Nvml, "load", classmethod(lambda cls, deadline_s=5.0: cls(fake, 5.0)))
    marker = tmp_path / "nvidiactl"
    marker.touch()
    options = LiveOptions(
        driver_markers=(str(marker),), sample_seconds=WINDOW_S, sample_interval_s=0.1,
        sys_root=str(tmp_path / "sys"), command_timeout_s=2.0, load_seconds=load_s,
        load_warmup_s=WARMUP_S, bandwidth_s=bandwidth_s,
    )  # fmt: skip
    runner = CommandRunner(path=str(tmp_path / "no-bin"))
    return LiveSources(
        options, runner, nvml_reads={}, workloads=workloads, installed=installed_evidence
    )


def sampled(sources: LiveSources) -> dict[str, Any]:
    snapshot, reason = sources.gpu_snapshot()
    assert snapshot is not None, reason
    return snapshot


def pids(folder: Path, phase: str) -> list[int]:
    return [int(w) for f in sorted(folder.glob(f"*.{phase}.pids")) for w in f.read_text().split()]


def test_load_runs_the_declared_busy_workload_on_every_gpu_through_the_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marks: Path
) -> None:
    monkeypatch.setenv(BEHAVIOUR_VARIABLE, "work")
    sources = live(tmp_path, monkeypatch, load_s=LOAD_S)
    try:
        snapshot = sampled(sources)
    finally:
        sources.close()
    running = [{"index": i, "uuid": UUIDS[i], "state": "running", "reason": None} for i in (0, 1)]
    assert snapshot["load"] == {
        "workload": MODULE,
        "phase": "soak",
        "engine": "fake",
        "gpus": running,
        "errors": [],
    }
    for uuid in UUIDS:  # one child per GPU, seeing it alone, asked for more than the window
        phase, flag, seconds, *rest = json.loads((marks / f"{uuid}.soak.args").read_text())
        assert (phase, flag, rest) == ("soak", "--seconds", ["--engine", "auto"])
        assert float(seconds) >= LOAD_S
    assert all("load" not in gpu["unavailable"] for gpu in snapshot["gpus"])
    assert still_running(pids(marks, "soak"), within_s=5.0) == []  # close() reaped them


def test_a_gpu_the_load_did_not_keep_busy_makes_telemetry_unknown_live_and_replayed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marks: Path
) -> None:
    monkeypatch.setenv(BEHAVIOUR_VARIABLE, f"{UUIDS[0]}=error,{UUIDS[1]}=work")
    sources = live(tmp_path, monkeypatch, load_s=LOAD_S)
    try:
        snapshot = sampled(sources)
    finally:
        sources.close()
    first, second = snapshot["gpus"]
    assert (first["unavailable"]["load"], first["failures"]["load"]) == ("error", FAILED)
    assert "load" not in second["unavailable"]
    assert snapshot["load"]["errors"] == [f"GPU 0: {FAILED}"]
    assert [g["state"] for g in snapshot["load"]["gpus"]] == ["failed", "running"]
    # replayed: the recorded node with this snapshot in place of its own
    node = tmp_path / "node"
    shutil.copytree(BUNDLE, node)
    (node / "nvml.json").write_text(json.dumps(snapshot), encoding="utf-8")
    result = execute(RunRequest(RunConfig(), str(node))).check("gpu_telemetry")
    assert result is not None and result.status.value == "unknown"
    assert result.error == f"GPU 0 load: {FAILED}"
    assert still_running(pids(marks, "soak"), within_s=5.0) == []


def test_a_load_child_not_ready_when_the_window_opens_is_named_and_never_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marks: Path
) -> None:
    """The window waits for the children at most the workload's start allowance (none here:
    children that never say they are ready, and ignore SIGTERM; a load that waited for them
    would find them hung at its deadline instead)."""
    monkeypatch.setenv(BEHAVIOUR_VARIABLE, "no-ready")
    quick = WorkloadSpec(phase="soak", module=MODULE, record="accept/soak.json", summary="fake",
                         share=None, order=30, keeps_busy=True, startup_s=0.0)  # fmt: skip
    sources = live(tmp_path, monkeypatch, load_s=LOAD_S, workloads=(quick,))
    try:
        snapshot = sampled(sources)
    finally:
        sources.close()
    late = "the --load workload (soak) was not ready when the window opened"
    assert [g["failures"]["load"] for g in snapshot["gpus"]] == [late, late]
    assert [g["state"] for g in snapshot["load"]["gpus"]] == ["late", "late"]
    assert still_running(pids(marks, "soak"), within_s=5.0) == []  # SIGTERM ignored: SIGKILL


def test_the_load_is_stopped_and_reaped_before_the_bandwidth_probe_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marks: Path
) -> None:
    monkeypatch.setenv(BEHAVIOUR_VARIABLE, "work")
    sources = live(tmp_path, monkeypatch, load_s=60.0, bandwidth_s=5.0)
    try:
        sources.gpu_snapshot()
        loading = pids(marks, "soak")
        assert len(loading) == 2 and still_running(loading, within_s=0.0) == loading
        monkeypatch.setenv(BEHAVIOUR_VARIABLE, "bandwidth")
        artifact = sources.artifact(BANDWIDTH_JSON)
        assert still_running(loading, within_s=0.0) == []  # before close(): the probe did it
    finally:
        sources.close()
    assert artifact.text is not None, artifact.reason


def test_bandwidth_runs_the_bandwidth_checks_declared_workload_on_the_gpus_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, marks: Path
) -> None:
    """`run --bandwidth`: the environment's GPUs (CUDA_VISIBLE_DEVICES left as it is); an
    acceptance phase: its GPUs alone. The record is the child's result, as a bundle keeps it."""
    monkeypatch.setenv(BEHAVIOUR_VARIABLE, "bandwidth")
    sources = live(tmp_path, monkeypatch, bandwidth_s=5.0)
    first = sources.artifact(BANDWIDTH_JSON)
    sources.close()
    assert first.text is not None, first.reason
    assert json.loads(first.text) == {"format": "sitscheck-bandwidth", "version": 1, "gpus": [],
                                      "errors": [], "cuda_visible_devices": None}  # fmt: skip
    assert first.ref.endswith(f"{MODULE} bandwidth --seconds 5.0 --engine ptx")
    (args,) = [json.loads(p.read_text()) for p in marks.glob("*.bandwidth.args")]
    assert args == ["bandwidth", "--seconds", "5.0", "--engine", "ptx"]
    phase = live(tmp_path, monkeypatch, bandwidth_s=5.0)
    phase.options.bandwidth_gpus = (UUIDS[1],)
    second = phase.artifact(BANDWIDTH_JSON)
    phase.close()
    assert json.loads(second.text or "{}")["cuda_visible_devices"] == UUIDS[1]


def test_a_bandwidth_probe_that_hangs_is_killed_at_its_deadline_and_named(
    monkeypatch: pytest.MonkeyPatch, marks: Path
) -> None:
    """The probe as `run --bandwidth` runs it (`LiveSources.artifact` returns its artifact as
    it is), on a clock that passes its deadline once the probe has said what it does."""
    monkeypatch.setenv(BEHAVIOUR_VARIABLE, "hang")
    spoke = JumpClock(lambda: any(marks.glob("*.bandwidth.doing")))
    artifact = run_probe(MODULE, 0.5, clock=spoke, grace_s=GRACE_S)
    assert spoke.jumped and artifact.text is None
    assert artifact.reason is not None and artifact.reason.endswith(
        "stopped responding while bandwidth: fake work on none; killed"  # none: inherited
    )
    assert still_running(pids(marks, "bandwidth"), within_s=5.0) == []


def test_with_no_busy_workload_declared_every_gpu_says_the_load_did_not_run() -> None:
    nvml = Nvml(FakePynvml(RECORDING))
    nvml.init()
    load = start_load(nvml, None, LOAD_S, {})
    snapshot: dict[str, Any] = {"gpus": [{"index": 0}, {"index": 1}]}
    load.mark(snapshot)
    load.stop()
    why = ("--load did not run: no installed check declares a workload that keeps the GPUs "
           "busy (`WorkloadSpec.keeps_busy`)")  # fmt: skip
    assert [g["failures"]["load"] for g in snapshot["gpus"]] == [why, why]


def test_a_job_s_gpus_alone_are_loaded() -> None:
    """CUDA_VISIBLE_DEVICES in sitscheck's environment (a job's GPUs) names what --load may
    use: indices (NVML's, PCI bus order) or UUIDs or their prefixes, read as CUDA reads them,
    to the first entry that names no GPU."""
    gpus = [Target(i, uuid, None, None) for i, uuid in enumerate(UUIDS)]
    assert visible_targets(gpus, {}) == gpus
    assert visible_targets(gpus, {"CUDA_VISIBLE_DEVICES": "1"}) == gpus[1:]
    assert visible_targets(gpus, {"CUDA_VISIBLE_DEVICES": UUIDS[1][:12]}) == gpus[1:]
    assert visible_targets(gpus, {"CUDA_VISIBLE_DEVICES": "1,0"}) == [gpus[1], gpus[0]]
    assert visible_targets(gpus, {"CUDA_VISIBLE_DEVICES": "0,7,1"}) == gpus[:1]
    assert visible_targets(gpus, {"CUDA_VISIBLE_DEVICES": "GPU-,1"}) == []  # ambiguous
    assert visible_targets(gpus, {"CUDA_VISIBLE_DEVICES": ""}) == []


def test_a_load_whose_thread_is_refused_ends_its_children_and_says_so(
    monkeypatch: pytest.MonkeyPatch, marks: Path
) -> None:
    """Children nobody hears would block in their writes: none is left, and every GPU says
    why its window was not under load."""
    from sitscheck.threads import CannotStart
    from sitscheck.workloads import children

    def refuse(*args: object, name: str, **kwargs: object) -> None:
        raise CannotStart(f"could not start a thread ({name}): can't start new thread")

    monkeypatch.setattr(children, "start_daemon", refuse)
    monkeypatch.setenv(BEHAVIOUR_VARIABLE, "work")
    nvml = Nvml(FakePynvml(RECORDING))
    nvml.init()
    load = start_load(nvml, SOAK, LOAD_S, {})
    snapshot: dict[str, Any] = {"gpus": [{"index": 0}, {"index": 1}]}
    load.mark(snapshot)
    why = ("the --load workload (soak) did not run: could not start a thread (workload): can't "
           "start new thread")  # fmt: skip
    assert [g["failures"]["load"] for g in snapshot["gpus"]] == [why, why]
    assert len(pids(marks, "soak")) == 2
    assert still_running(pids(marks, "soak"), within_s=5.0) == []
