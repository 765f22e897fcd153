"""`sitscheck accept` at the command line: its refusals (exit 3, one line), its options, and
whole runs on a fake node (tests/faults/fault_node.py: the recorded 2×H200's NVML, commands
and sysfs, or no driver at all) in a real `sitscheck` process. No GPU is used: on the node
with NVML the workload children find no CUDA and fail, which is what the run must report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fakes.fake_pynvml import FakePynvml, load_recording
from sitscheck.accept.command import Refused, prepare
from sitscheck.app import selected_checks
from sitscheck.cli import app
from sitscheck.config import RunConfig
from sitscheck.contract.evidence import gather
from sitscheck.sources.nvml import Nvml, NvmlUnavailable
from typer.testing import CliRunner

TESTS = Path(__file__).resolve().parent.parent
BUNDLES = TESTS / "bundles"
FAULT_NODE = TESTS / "faults" / "fault_node.py"
PHASES = ("memtest", "compute", "soak", "bandwidth", "multigpu")


class NodeNvml(FakePynvml):
    """The recorded node's NVML, with MIG modes and processes on its GPUs as a test sets them."""

    def __init__(self, recording: dict[str, Any]) -> None:
        super().__init__(recording)
        self.mig: dict[int, int] = {}
        self.processes: dict[int, list[int]] = {}

    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]:
        return [self.mig.get(handle.index, 0), self.mig.get(handle.index, 0)]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=pid, usedGpuMemory=1 << 30) for pid in
                self.processes.get(handle.index, [])]  # fmt: skip

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle: Any) -> list[SimpleNamespace]:
        return []


def use_nvml(monkeypatch: pytest.MonkeyPatch, bundle: str = "h200x2-idle-v0") -> NodeNvml:
    fake = NodeNvml(load_recording(BUNDLES / bundle / "nvml.json"))

    def load(cls: type[Nvml], deadline_s: float = 5.0) -> Nvml:
        return cls(fake, deadline_s)

    monkeypatch.setattr(Nvml, "load", classmethod(load))
    return fake


def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    def load(cls: type[Nvml], deadline_s: float = 5.0) -> Nvml:
        raise NvmlUnavailable("pynvml cannot be imported: no libnvidia-ml.so.1", no_driver=False)

    monkeypatch.setattr(Nvml, "load", classmethod(load))


def refusal(*args: str) -> str:
    """`sitscheck accept ARGS` must refuse: exit 3, one line on stderr, nothing on stdout."""
    done = CliRunner().invoke(app, ["accept", *args])
    assert done.exit_code == 3, (done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_help_lists_the_options_and_hides_the_test_only_one() -> None:
    done = CliRunner().invoke(app, ["accept", "--help"])
    assert done.exit_code == 0
    for option in ("--budget", "--gpus", "--skip", "--engine", "--force", "--collect",
                   "--output", "--profile", "--rules", "--config"):  # fmt: skip
        assert option in done.stdout, option
    assert "--inject" not in done.stdout


def test_a_budget_below_the_minimum_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    use_nvml(monkeypatch)
    assert refusal("--budget", "10") == "sitscheck: --budget 10: at least 60 s is needed"


def test_an_unknown_phase_is_refused_listing_the_phases(monkeypatch: pytest.MonkeyPatch) -> None:
    use_nvml(monkeypatch)
    assert refusal("--skip", "nosuch") == (
        "sitscheck: --skip nosuch: not a phase (phases: memtest, compute, soak, bandwidth, "
        "multigpu)"
    )


def test_an_unknown_engine_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    use_nvml(monkeypatch)
    assert refusal("--engine", "cuda") == "sitscheck: --engine cuda: one of auto, torch, ptx"


@pytest.mark.parametrize(
    ("gpus", "line"),
    [
        ("9", "sitscheck: --gpus 9: no GPU 9 (this node has 2)"),
        ("0,x", "sitscheck: --gpus 0,x: 'x' is not a GPU index"),
    ],
)
def test_a_gpu_the_node_does_not_have_is_refused(
    gpus: str, line: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_nvml(monkeypatch)
    assert refusal("--gpus", gpus) == line


def test_without_nvml_a_gpu_index_is_refused_saying_why_there_are_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    no_nvml(monkeypatch)
    assert refusal("--gpus", "0") == (
        "sitscheck: --gpus 0: no GPU 0 (this node has none: NVML: pynvml cannot be imported: "
        "no libnvidia-ml.so.1)"
    )


def test_a_malformed_fault_is_refused_before_the_plan_is_printed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_nvml(monkeypatch)
    assert refusal("--inject", "hang:x") == "sitscheck: --inject hang:x: FAULT:GPU (test-only)"


def _collect_target(kind: str, tmp_path: Path) -> Path:
    """A --collect path that `sitscheck collect` would refuse, of one `kind`."""
    empty = tmp_path / "empty"
    empty.mkdir()
    if kind == "not empty":
        (tmp_path / "full").mkdir()
        (tmp_path / "full" / "old.txt").write_text("an earlier bundle\n")
        return tmp_path / "full"
    if kind == "link":
        (tmp_path / "link").symlink_to(empty, target_is_directory=True)
        return tmp_path / "link"
    if kind == "file":
        (tmp_path / "file").write_text("")
        return tmp_path / "file"
    if kind == "tarball taken":
        (tmp_path / "b.tar.gz").symlink_to(tmp_path / "elsewhere.tar.gz")  # even a dangling link
        return tmp_path / "b.tar.gz"
    (tmp_path / "plain").write_text("")
    return tmp_path / "plain" / "bundle"  # under a file


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("not empty", "the folder is not empty (a bundle of old and new files would mix two "
         "nodes' or two times' evidence); give a new or empty folder"),
        ("link", "a symbolic link; give the folder itself"),
        ("file", "not a folder"),
        ("tarball taken", "already exists; give a new tarball path"),
        ("under a file", "{parent} is not a folder"),
    ],
)  # fmt: skip
def test_a_collect_target_collect_would_refuse_is_refused_before_the_plan(
    kind: str, why: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--collect is checked as `sitscheck collect` checks its target, before anything starts
    (one line, exit 3, no plan printed, NVML not opened), not at the end of the run; the
    refused path and what a link points at are left as they were."""
    fake = use_nvml(monkeypatch)
    target = _collect_target(kind, tmp_path)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    line = refusal("--budget", "60", "--collect", str(target))  # a regression runs 60 s, no more
    assert line == f"sitscheck: accept --collect {target}: {why.format(parent=target.parent)}"
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before
    assert fake.shutdown_count == 0  # refused before the GPUs were looked at


def test_mig_enabled_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = use_nvml(monkeypatch)
    fake.mig[1] = 1
    assert refusal() == (
        "sitscheck: GPU 1 has MIG enabled: accept loads whole GPUs (--force to run anyway)"
    )
    assert fake.shutdown_count == 1  # the NVML session opened for it is closed


def test_another_process_on_a_gpu_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = use_nvml(monkeypatch)
    fake.processes[0] = [4242]
    assert refusal() == (
        "sitscheck: GPU 0 is in use by pid 4242: accept would disturb it and measure it wrong "
        "(--force to run anyway)"
    )
    # a GPU left out with --gpus is not asked
    fake.processes = {1: [4242]}
    with pytest.raises(Refused):
        start(["0", "1"])
    start(["0"]).close()


def start(gpus: list[str] | None = None, force: bool = False) -> Any:
    config = RunConfig()
    return prepare(
        config, gather(selected_checks(config)), 300.0, ",".join(gpus) if gpus else None, [],
        "auto", force, [], False, lambda: False,
    )  # fmt: skip


def test_force_runs_on_a_busy_gpu_with_mig(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = use_nvml(monkeypatch)
    fake.mig[0], fake.processes[1] = 1, [4242]
    acceptance = start(force=True)
    try:
        assert [p.gpus for p in acceptance.plan.phases] == [(0, 1)] * len(PHASES)
        assert [t.uuid for t in acceptance.gpus.targets] == [
            "GPU-3d593023-41d0-bcb0-fd5b-7849b655a02f", "GPU-9f23e032-f1a8-da44-56dc-43ccc4c4bdba"
        ]  # fmt: skip
    finally:
        acceptance.close()
    assert fake.shutdown_count == 1


def test_a_lost_gpu_is_kept_out_and_the_others_are_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """One GPU NVML cannot reach (fallen off the bus) no longer leaves the whole node without
    load: it is planned, and each phase says why it did not run there."""
    use_nvml(monkeypatch, "faults/gpu-lost-gpu1")
    acceptance = start()
    try:
        assert [t.index for t in acceptance.gpus.targets] == [0, 1]
        assert acceptance.plan.phases[0].gpus == (0, 1)
        assert acceptance.gpus.unreachable == {
            1: "not run: NVML cannot reach GPU 1: nvmlDeviceGetHandleByIndex(1): "
            "NVML_ERROR_GPU_IS_LOST"
        }
        assert list(acceptance.baseline_used) == [0]
    finally:
        acceptance.close()


# ---- whole runs in a real process on a fake node ----------------------------------------------


def fake_node(tmp_path: Path, driver: bool) -> Path:
    sys.path.insert(0, str(FAULT_NODE.parent))
    try:
        import fault_node
    finally:
        sys.path.remove(str(FAULT_NODE.parent))
    spec = fault_node.make_node(tmp_path)
    if not driver:
        fault_node.remove_command(spec, "nvidia-smi")
        spec.marker = str(tmp_path / "no-such-marker")
        spec.nvml.mode = "absent"
    path: Path = spec.write()
    return path


def accept(node: Path, *args: str) -> tuple[int, dict[str, Any], str, float]:
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(FAULT_NODE), str(node), "accept", "-o", "json", *args],
        capture_output=True, text=True, timeout=600, cwd=TESTS,
    )  # fmt: skip
    took = time.monotonic() - began
    assert done.stdout.lstrip().startswith("{"), done.stdout + done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr, took


def checks(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in report["checks"]}


def test_without_a_driver_every_phase_is_unknown_naming_why(tmp_path: Path) -> None:
    """The 2×H200 with its driver gone: the GPUs on the PCI bus that no driver serves are the
    driver check's critical finding (the run's status); every phase is UNKNOWN naming why,
    the multi-GPU one too (how many GPUs there are is not known: never "one GPU", skipped)."""
    code, report, stderr, _ = accept(fake_node(tmp_path, driver=False), "--budget", "60")
    assert code == 2 and report["status"] == "critical"
    found = checks(report)
    assert [f["code"] for f in found["driver"]["findings"]] == ["driver.not_loaded"]
    nvml = "NVML: pynvml cannot be imported: libnvidia-ml.so.1: cannot open shared object file"
    for name in ("memtest", "compute", "soak", "multigpu"):
        assert found[name]["status"] == "unknown"
        assert found[name]["error"] == f"{name}: no GPU took part ({nvml})"
    assert found["bandwidth"]["status"] == "unknown"  # a phase that did not run: never skipped
    assert found["bandwidth"]["error"].startswith("bandwidth probe: no NVIDIA driver")
    for name in PHASES:
        assert f"  {name:<10} no GPU to load" in stderr.splitlines()


def test_skip_leaves_a_phase_out_and_the_headline_says_so(tmp_path: Path) -> None:
    code, report, _, _ = accept(
        fake_node(tmp_path, driver=False), "--budget", "60", "--skip", "memtest",
        "--skip", "bandwidth",
    )  # fmt: skip
    found = checks(report)
    assert found["memtest"]["status"] == "skipped"
    assert found["memtest"]["skip_reason"] == "--skip memtest"
    assert found["bandwidth"]["status"] == "skipped"
    assert found["bandwidth"]["skip_reason"] == "--skip bandwidth"
    assert "accepted without bandwidth and memtest" in report["headline"]
    for name in ("compute", "soak", "multigpu"):  # not skipped: they still had no GPU
        assert found[name]["status"] == "unknown", found[name]
    assert code == 2  # the driver check's critical finding (GPUs on the bus, no driver)


def test_with_npd_among_the_outputs_the_exit_code_is_npds_as_for_run(tmp_path: Path) -> None:
    """`-o npd`: node-problem-detector's exit codes (0 ok or warning, 1 critical, 2 unknown),
    for the whole run, as `run` gives them: the driverless node is critical (1, not 2). A
    malformed OTEL_* setting is one warning line, as for run."""
    node = fake_node(tmp_path, driver=False)
    env = {**os.environ, "OTEL_RESOURCE_ATTRIBUTES": "site=s1,broken"}
    codes = {}
    for command in (["accept", "--budget", "60"], ["run"]):
        done = subprocess.run(
            [sys.executable, str(FAULT_NODE), str(node), *command, "-o", "npd",
             "-o", f"json={tmp_path / 'report.json'}"],
            capture_output=True, text=True, timeout=600, cwd=TESTS, env=env,
        )  # fmt: skip
        report = json.loads((tmp_path / "report.json").read_text())
        assert report["status"] == "critical", (command, done.stderr)
        assert done.stdout.startswith("critical: "), done.stdout  # NPD's one line
        warned = [line for line in done.stderr.splitlines() if "OTEL_RESOURCE_ATTRIBUTES" in line]
        assert len(warned) == 1 and warned[0].startswith("sitscheck: warning: "), done.stderr
        codes[command[0]] = done.returncode
    assert codes == {"accept": 1, "run": 1}


@pytest.mark.slow
def test_without_a_driver_the_run_ends_within_its_budget(tmp_path: Path) -> None:
    _, _, _, took = accept(fake_node(tmp_path, driver=False), "--budget", "60")
    assert took < 60.0 + 5.0


@pytest.mark.slow
def test_with_nvml_but_no_cuda_every_phase_is_unknown_with_the_childs_reason(
    tmp_path: Path,
) -> None:
    """The recorded 2×H200's NVML, no CUDA here: every workload child fails at its start, and
    says so; the bandwidth probe too. Nothing passes, nothing is critical, the budget holds."""
    code, report, stderr, took = accept(fake_node(tmp_path, driver=True), "--budget", "60")
    assert took < 60.0 + 5.0
    found = checks(report)
    for name in ("memtest", "compute", "soak"):
        assert found[name]["status"] == "unknown", found[name]
        error = found[name]["error"]
        assert error.startswith("GPU 0: failed: ") and "; GPU 1: failed: " in error, error
        assert not found[name]["findings"]
    assert found["bandwidth"]["status"] == "unknown"
    assert code == 3 and report["status"] == "unknown"
    assert "  memtest    GPUs 0,1" in stderr
