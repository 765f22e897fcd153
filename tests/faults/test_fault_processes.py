"""Deadlines own the processes under them (issue #17): a command's timeout never outlives its
caller's deadline; on a deadline the command, its group and everything below it (a grandchild
that called `setsid` included) are killed and the UNKNOWN names the command in every check that
waited on it; output caps hold while a command writes; no process outlives a run, a `run
--daemon` or a `sitscheck daemon` stopped by SIGTERM.

Real processes: the installed `sitscheck` on this host, and the fake 2×H200 node
(`fault_node.py` as the launcher, which starts as the entry point does).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from fakes.commands import HANG, write_command
from fakes.fake_checks import FakeCheck
from fakes.procs import kill_by_pid, read_pids, still_running
from fault_expect import (
    GPU_CHECKS,
    LOAD_SLACK_S,
    assert_complete,
    assert_faulted,
    assert_within,
    result,
)
from fault_node import (
    FAST,
    RULES_LOADED,
    SMI_FILES,
    NodeSpec,
    finished,
    hang_body,
    run_live,
    signal_when_ready,
    wait_for,
    write_smi,
)
from sitscheck.app import installed_evidence
from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.contract.runner import run_checks
from sitscheck.interrupt import GRACE_S
from sitscheck.models import Report, Status
from sitscheck.sources import artifacts as names
from sitscheck.sources.command import CommandRunner
from sitscheck.sources.live import LiveOptions, LiveSources
from sitscheck.sources.scope import Scope, entered

PY = sys.executable
SITSCHECK = Path(sys.executable).with_name("sitscheck")
LAUNCHER = Path(__file__).resolve().parent / "fault_node.py"
SLACK_S = 3.0  # "within the deadline plus a few seconds": start-up, rules, the report


def launch(node: NodeSpec, *args: str) -> list[str]:
    return [PY, str(LAUNCHER), str(node.write()), *args]


def timed(argv: list[str], limit_s: float = 60, **kwargs: Any) -> tuple[Any, float]:
    began = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=limit_s, **kwargs)
    return done, time.monotonic() - began


# ---- through the installed CLI, on this host ------------------------------------------------


def test_a_hung_nvidia_smi_with_a_setsid_grandchild_leaves_nothing_installed_cli(
    tmp_path: Path, pidfile: Path
) -> None:
    """The issue's node: a `nvidia-smi` that hangs, ignores SIGTERM and leaves a grandchild in
    a session of its own. The checks that wait on it (the kernel-log checks map events to GPUs
    through it) end within their deadline, and nothing of it is left."""
    write_command(tmp_path / "bin", "nvidia-smi", hang_body(pidfile, setsid_child=True))
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    target = tmp_path / "report.json"
    argv = [str(SITSCHECK), "run", "--timeout", "5"]
    done, elapsed = timed([*argv, "-o", f"json={target}"], env=env)

    pids = read_pids(pidfile)
    if not pids:
        pytest.skip("this host's GPUs answered through NVML: the fake nvidia-smi never ran")
    assert_within(elapsed, 5 + SLACK_S)
    assert "Traceback" not in done.stderr, done.stderr
    assert still_running(pids) == [], "a process of the hung nvidia-smi outlived the run"
    report = msgspec.convert(json.loads(target.read_text()), Report)
    assert done.returncode == report.exit_code, (done.returncode, report.status)
    for check in report.checks:
        if check.error and "timed out" in check.error:
            assert "nvidia-smi" in check.error, check.error


# ---- a whole node (the fake 2×H200), as a real process ---------------------------------------


def test_a_hung_nvidia_smi_is_named_by_every_check_that_waited_on_it(
    node: NodeSpec, tmp_path: Path, pidfile: Path
) -> None:
    """No NVML, every `nvidia-smi` hangs (and leaves a setsid'd grandchild): at --timeout 5 the
    10 s command timeout is cut to the checks' deadline; exit 3 within it; every GPU check
    names the command it waited on; nothing is left."""
    node.nvml.mode = "absent"
    write_smi(node, dict.fromkeys(SMI_FILES, hang_body(pidfile, setsid_child=True)))
    target = tmp_path / "report.json"
    argv = launch(node, "run", "--timeout", "5", "--run-timeout", "30", "--sample-seconds", "0.2")
    done, elapsed = timed([*argv, "-o", f"json={target}"])

    assert done.returncode == 3, done.stdout + done.stderr
    assert_within(elapsed, 5 + SLACK_S)
    pids = read_pids(pidfile)
    assert len(pids) >= 2
    assert still_running(pids) == [], "a process of the hung nvidia-smi outlived the run"
    report = msgspec.convert(json.loads(target.read_text()), Report)
    assert_complete(report)
    clamped = re.compile(r"`nvidia-smi [^`]*` did not answer within \d+(\.\d)? s \(what was left")
    for name in GPU_CHECKS:
        assert_faulted(report, name, clamped)
    for check in report.checks:  # none left waiting past its deadline without a name
        assert "no result within its deadline" not in (check.error or ""), check


def test_daemon_runs_leave_no_process_behind(node: NodeSpec, tmp_path: Path, pidfile: Path) -> None:
    """`run --daemon` twice with a hung nvidia-smi: each run's processes are gone after it."""
    node.nvml.mode = "absent"
    write_smi(node, {"topo": hang_body(pidfile, setsid_child=True)})
    argv = launch(node, "run", "--daemon", "--state-dir", str(tmp_path / "state"))
    argv += ["--timeout", "3", "--run-timeout", "10", "--sample-seconds", "0.2", "-o", "json"]
    for run in (1, 2):
        done, elapsed = timed(argv)
        assert done.returncode == 3, done.stderr
        assert_within(elapsed, 3 + SLACK_S)
        pids = read_pids(pidfile)
        assert len(pids) == 2 * run
        assert still_running(pids) == [], f"run {run} left a process"


def test_sigterm_stops_the_daemon_mid_run_at_once_and_leaves_nothing(
    node: NodeSpec, tmp_path: Path, pidfile: Path
) -> None:
    """`sitscheck daemon`: SIGTERM while a run waits on a hung `nvidia-smi topo -m` (30 s
    command timeout, 40 s check deadline) ends that run at once (its report delivered), then
    the service; the hung command and its grandchild are gone."""
    write_smi(node, {"topo": hang_body(pidfile, setsid_child=True)})
    node.progress = str(tmp_path / "finished.txt")
    config = tmp_path / "config.yaml"
    config.write_text("command_timeout_s: 30\ncheck_timeout_s: 40\nrun_timeout_s: 50\n")
    target = tmp_path / "report.json"
    argv = launch(node, "daemon", "--interval", "3600", "--config", str(config))
    argv += ["--state-dir", str(tmp_path / "state"), "-o", f"json={target}"]
    ended = signal_when_ready(  # once the rules are compiled: their time is not the signal's
        argv,
        lambda _: len(read_pids(pidfile)) >= 2 and RULES_LOADED in finished(node),
        signal.SIGTERM,
        "the hung nvidia-smi topo -m and the rules",
    )
    assert ended.code == 0, ended.stderr
    assert ended.took < GRACE_S, f"the daemon stopped {ended.took:.1f}s after SIGTERM"
    assert still_running(read_pids(pidfile)) == []
    report = msgspec.convert(json.loads(target.read_text()), Report)
    assert result(report, "topology").error == "interrupted by SIGTERM before it finished"


# ---- the command runner under a deadline ------------------------------------------------------


def test_a_commands_timeout_never_outlives_the_deadline_of_the_check_that_runs_it(
    pidfile: Path,
) -> None:
    argv = [PY, str(HANG), "--ignore-term", "--setsid-child", "--pidfile", str(pidfile)]
    scope = Scope(time.monotonic() + 2.0)
    began = time.monotonic()
    with entered(scope):
        outcome = CommandRunner().run(argv, timeout=30)
    elapsed = time.monotonic() - began

    assert outcome.timed_out and outcome.clamped
    assert outcome.budget_s is not None and outcome.budget_s < 2.0
    reason = outcome.failure_reason()
    assert reason is not None and str(HANG) in reason and "what was left of its deadline" in reason
    assert elapsed < 2.0 + LOAD_SLACK_S, "the command ran on past the check's deadline"  # 30 s
    pids = read_pids(pidfile)
    assert len(pids) == 2
    assert still_running(pids) == [], "the setsid'd grandchild outlived the command"


def test_an_explicit_deadline_clamps_the_timeout_too(pidfile: Path) -> None:
    argv = [PY, str(HANG), "--pidfile", str(pidfile)]
    outcome = CommandRunner().run(argv, timeout=30, deadline=time.monotonic() + 1.0)
    assert outcome.timed_out and outcome.clamped and (outcome.budget_s or 0) <= 1.0
    gone = CommandRunner().run(argv, timeout=30, deadline=time.monotonic() - 1.0)
    assert gone.error == "not started: its caller's deadline had passed"
    assert still_running(read_pids(pidfile)) == []


def test_the_output_cap_holds_while_the_command_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """32 MiB printed against a 1 MiB cap, then a hang: cut at the cap and killed there, long
    before the timeout, and nothing written to TMPDIR."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    write_command(tmp_path / "bin", "nvidia-smi", "head -c 33554432 /dev/zero\nexec sleep 1000")
    runner = CommandRunner(path=str(tmp_path / "bin"), output_cap=1024 * 1024)
    began = time.monotonic()
    outcome = runner.run(["nvidia-smi", "-q"], timeout=20)

    assert time.monotonic() - began < 10, "waited for the timeout instead of the cap"
    assert outcome.overflow == "stdout" and outcome.truncated and not outcome.timed_out
    assert len(outcome.stdout) == 1024 * 1024
    assert outcome.failure_reason() == (
        "`nvidia-smi -q` printed more than the cap on stdout; cut there, killed"
    )
    assert list(tmpdir.iterdir()) == []


def test_a_nvidia_smi_printing_zeros_forever_costs_no_disk_and_is_named(
    node: NodeSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's fake: every `nvidia-smi` is `cat /dev/zero` (no NVML): the GPU checks name
    it, within a command timeout, and TMPDIR stays empty."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    node.nvml.mode = "absent"
    write_smi(node, dict.fromkeys(SMI_FILES, "exec cat /dev/zero"))
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, FAST["command_timeout_s"] + LOAD_SLACK_S)
    for name in ("gpu_telemetry", "memory_errors", "nvlink", "pcie_link"):
        assert_faulted(report, name, "printed more than the cap on stdout")
    assert list(tmpdir.iterdir()) == []


# ---- a check that timed out waiting on a shared command -------------------------------------


class SharingCheck(FakeCheck):
    """Reads the topology matrix, as the topology check does."""

    def collect(self, ctx: CheckContext) -> CheckOutput:
        ctx.sources.artifact(names.NVIDIA_SMI_TOPO)
        return self.output


def test_a_check_timed_out_waiting_on_a_shared_command_names_it(
    tmp_path: Path, pidfile: Path
) -> None:
    """Another caller (outside any check, with its own 30 s timeout) runs `nvidia-smi topo -m`;
    a check asking for the same output waits on it past its own 1 s deadline: its UNKNOWN
    names the command."""
    write_command(tmp_path / "bin", "nvidia-smi", hang_body(pidfile))
    sources = LiveSources(
        LiveOptions(command_timeout_s=30),
        CommandRunner(path=str(tmp_path / "bin")),
        installed=installed_evidence,
    )
    holder = threading.Thread(target=sources.artifact, args=(names.NVIDIA_SMI_TOPO,), daemon=True)
    holder.start()
    try:
        wait_for(lambda: len(read_pids(pidfile)) >= 2, 10.0, "the hung nvidia-smi topo -m")
        config = RunConfig(check_timeout_s=1, run_timeout_s=5)
        (waited,) = run_checks([SharingCheck("sharing")], sources, config)
    finally:
        kill_by_pid(read_pids(pidfile))
        holder.join(5)
    assert waited.status == Status.UNKNOWN
    assert waited.error is not None
    assert re.fullmatch(
        r"timed out: no result within its deadline \(\d+\.\ds\) "
        r"while waiting on `nvidia-smi topo -m`",
        waited.error,
    ), waited.error
