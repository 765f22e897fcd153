"""SIGTERM and SIGINT in the middle of a run (`healthcheck/interrupt.py`): the report of what
finished is written, what had not is UNKNOWN "interrupted", the exit code is 3, and the
children (a command hung in D state that ignores SIGTERM) are killed, within seconds.

The end-to-end tests run a real `sitscheck` process on the fake node (`fault_node.py` as the
launcher); the others drive `Interrupt` in this process with stand-ins for kill and exit.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from fakes.fake_checks import FakeCheck, HangingCheck
from fakes.procs import read_pids, still_running
from fault_expect import CHECKS, outline, result
from fault_node import (
    BUNDLE,
    RULES_LOADED,
    NodeSpec,
    finished,
    hang_body,
    signal_when_ready,
    wait_for,
    write_smi,
)
from sitscheck.config import RunConfig
from sitscheck.contract import Check
from sitscheck.contract.runner import run_checks
from sitscheck.interrupt import EXIT_INTERRUPTED, GRACE_S, Interrupt
from sitscheck.models import CheckResult, Report, Status
from sitscheck.sources.replay import ReplaySources

LAUNCHER = Path(__file__).resolve().parent / "fault_node.py"
SITSCHECK = Path(sys.executable).with_name("sitscheck")
SIGNALS = {"SIGTERM": signal.SIGTERM, "SIGINT": signal.SIGINT}
ACCEPTANCE_CHECKS = ("memtest", "compute", "soak", "multigpu")


# ---- end to end: a real process, a real signal ----------------------------------------------


@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_signal_mid_run_writes_the_partial_report_kills_children_and_exits_3(
    name: str, node: NodeSpec, baseline: Report, pidfile: Path, tmp_path: Path
) -> None:
    write_smi(node, {"topo": hang_body(pidfile)})  # topo -m hangs, ignoring SIGTERM
    node.progress = str(tmp_path / "finished.txt")
    config = tmp_path / "config.yaml"
    config.write_text("command_timeout_s: 30\nnvml_deadline_s: 1\n")  # nothing times out itself
    target = tmp_path / "out" / "report.json"
    argv = [sys.executable, str(LAUNCHER), str(node.write()), "run", "--config", str(config)]
    argv += ["--timeout", "40", "--run-timeout", "50", "--sample-seconds", "0.2"]
    argv += ["-o", f"json={target}", "-o", "text"]
    # tensorrt, bandwidth (no log, no --bandwidth), infiniband (no RDMA device) and the
    # acceptance checks (measured only by `sitscheck accept`): skipped, they never collect; and
    # the rules compiled (alongside the checks): on a loaded machine that alone can take
    # seconds, which is not what the signal costs
    skipped = {"topology", "tensorrt", "bandwidth", "infiniband", *ACCEPTANCE_CHECKS}
    others = set(CHECKS) - skipped | {RULES_LOADED}
    ended = signal_when_ready(
        argv,
        lambda _: len(read_pids(pidfile)) >= 2 and finished(node) >= others,
        SIGNALS[name],
        "the hung nvidia-smi topo -m, the other checks and the rules",
    )
    stdout, stderr = ended.stdout, ended.stderr

    assert ended.code == EXIT_INTERRUPTED, stdout + stderr
    # the deadline under test is the grace: past it the run is ended without its report
    assert ended.took < GRACE_S, f"exited {ended.took:.1f}s after {name}"
    assert f"sitscheck: interrupted by {name}" in stderr
    assert "Traceback" not in stderr
    assert still_running(read_pids(pidfile)) == [], "a child outlived the interrupted run"
    report = msgspec.convert(json.loads(target.read_text()), Report)
    assert [c.name for c in report.checks] == list(CHECKS)
    topology = result(report, "topology")
    assert topology.status == Status.UNKNOWN
    assert topology.error == f"interrupted by {name} before it finished"
    for check in report.checks:
        if check.name != "topology":  # finished before the signal: kept as they were
            assert outline(check) == outline(result(baseline, check.name)), check
    assert f"interrupted by {name}" in report.headline
    assert "topology" in stdout  # the text report went out too
    assert list(target.parent.iterdir()) == [target]  # written whole, no temporary left


def catches(pid: int, signum: int) -> bool:
    """The process has a handler for `signum` (its SigCgt mask in /proc)."""
    status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    mask = next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:"))
    return bool(int(mask, 16) >> (signum - 1) & 1)


def has_loaded(pid: int, library: str) -> bool:
    return library in Path(f"/proc/{pid}/maps").read_text(encoding="utf-8", errors="replace")


def test_a_signal_during_start_up_is_held_for_the_run_which_still_reports_installed_cli(
    tmp_path: Path,
) -> None:
    """The handlers are the first thing `sitscheck` installs: before its command line and its
    imports (msgspec's compiled core, which every model and record needs, is mapped well
    after). A SIGTERM sent the moment they are there is held for the run, which ends at once
    with a report saying so, exit 3."""
    target = tmp_path / "report.json"
    argv = [str(SITSCHECK), "run", "--from", str(BUNDLE), "-o", f"json={target}"]
    first: list[bool] = []

    def handler_there(process: subprocess.Popen[str]) -> bool:
        assert process.poll() is None, "ended before it had a SIGTERM handler"
        if not catches(process.pid, signal.SIGTERM):
            return False
        first.append(not has_loaded(process.pid, "msgspec/_core"))  # read after the handler
        return True

    ended = signal_when_ready(argv, handler_there, signal.SIGTERM, "a SIGTERM handler")

    assert first == [True], "the SIGTERM handler came only after the heavy imports"
    assert ended.code == EXIT_INTERRUPTED, ended.stdout + ended.stderr
    assert "sitscheck: interrupted by SIGTERM" in ended.stderr
    report = msgspec.convert(json.loads(target.read_text()), Report)
    assert report.status == Status.UNKNOWN and report.exit_code == ended.code
    assert [c.name for c in report.checks] == list(CHECKS)
    for check in report.checks:
        assert check.status == Status.UNKNOWN, check
        assert check.error is not None and "interrupted by SIGTERM before" in check.error


def test_a_signal_after_every_check_finished_gives_a_report_that_agrees_with_exit_3(
    node: NodeSpec, baseline: Report, tmp_path: Path
) -> None:
    """The signal comes once every check has finished, before the rules: the report is
    UNKNOWN and says it was interrupted, as its exit code 3 does (it used to say "ok")."""
    hold = tmp_path / "hold"
    node.hold_rules = str(hold)
    target = tmp_path / "report.json"
    argv = [sys.executable, str(LAUNCHER), str(node.write()), "run", "--sample-seconds", "0.2"]
    argv += ["-o", f"json={target}"]

    def go() -> None:
        time.sleep(0.2)  # only lets the handler run first: nothing is measured
        hold.with_suffix(".go").touch()

    reached = hold.with_suffix(".reached")
    ended = signal_when_ready(
        argv, lambda _: reached.exists(), signal.SIGTERM, "the run to reach its rules", then=go
    )

    assert ended.code == EXIT_INTERRUPTED, ended.stdout + ended.stderr
    report = msgspec.convert(json.loads(target.read_text()), Report)
    assert report.status == Status.UNKNOWN, report.headline
    assert report.exit_code == ended.code
    assert report.headline.startswith("UNKNOWN — ") and "interrupted by SIGTERM" in report.headline
    for check in report.checks:  # every check had finished: each keeps its result
        assert outline(check) == outline(result(baseline, check.name)), check


@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_a_signal_during_run_load_ends_the_load_workloads_children(
    name: str, node: NodeSpec, tmp_path: Path
) -> None:
    """`run --load`: a signal while the GPUs are loaded (the soak's declared workload, here the
    stand-in of tests/accept, at work on each GPU of the node) ends the run with its report,
    exit 3, and every child of the load with it (it runs in its own session: the signal's
    kill reaches it all the same)."""
    accept_tests = str(Path(__file__).resolve().parent.parent / "accept")
    marks = tmp_path / "marks"
    marks.mkdir()
    node.workload_modules = {"soak": "fake_workloads.behave"}
    target = tmp_path / "report.json"
    argv = [sys.executable, str(LAUNCHER), str(node.write()), "run", "--load"]
    argv += ["--sample-seconds", "60", "-o", f"json={target}"]
    path = os.pathsep.join(filter(None, (accept_tests, os.environ.get("PYTHONPATH"))))
    env = {**os.environ, "PYTHONPATH": path, "SITSCHECK_FAKE_MARKS": str(marks),
           "SITSCHECK_FAKE_BEHAVIOUR": "work"}  # fmt: skip

    def loaded(_: object) -> bool:  # each GPU's child at its work (its first beat written)
        return len(list(marks.glob("*.soak.beats"))) == 2

    ended = signal_when_ready(argv, loaded, SIGNALS[name], "the load on both GPUs", env=env)

    assert ended.code == EXIT_INTERRUPTED, ended.stdout + ended.stderr
    children = [int(w) for f in marks.glob("*.soak.pids") for w in f.read_text().split()]
    assert len(children) == 2
    assert still_running(children, within_s=5.0) == [], "a load child outlived the run"
    report = msgspec.convert(json.loads(target.read_text()), Report)
    assert f"interrupted by {name}" in report.headline


# ---- Interrupt in this process ---------------------------------------------------------------


class Recorder:
    def __init__(self) -> None:
        self.kills = 0
        self.exits: list[int] = []
        self.exited = threading.Event()

    def kill(self) -> None:
        self.kills += 1

    def exit_now(self, code: int) -> None:
        self.exits.append(code)
        self.exited.set()


def interrupt_with(recorder: Recorder, grace_s: float = 30.0) -> Interrupt:
    return Interrupt(grace_s, kill=recorder.kill, exit_now=recorder.exit_now)


@pytest.fixture
def sources(tmp_path: Path) -> ReplaySources:
    return ReplaySources(tmp_path)


def run_in_thread(checks: list[Any], sources: ReplaySources) -> tuple[threading.Thread, list[Any]]:
    out: list[list[CheckResult]] = []
    config = RunConfig(check_timeout_s=30, run_timeout_s=60)
    thread = threading.Thread(target=lambda: out.append(run_checks(checks, sources, config)))
    thread.start()
    return thread, out


def test_unfinished_checks_end_unknown_at_once_and_finished_ones_keep_their_result(
    sources: ReplaySources,
) -> None:
    recorder = Recorder()
    interrupt = interrupt_with(recorder)
    quick_check, hanging = FakeCheck("quick"), HangingCheck("hung")
    checks: list[Check] = [quick_check, hanging]
    thread, out = run_in_thread(interrupt.guard(list(checks)), sources)
    try:
        wait_for(lambda: bool(quick_check.ran_on), 5.0, "the quick check")
        time.sleep(0.1)
        began = time.monotonic()
        interrupt.trigger(signal.SIGTERM)
        thread.join(5.0)
        # the hung check never returns and its deadline is far: ended, it was the signal
        assert not thread.is_alive(), f"still running {time.monotonic() - began:.1f}s after"
    finally:
        hanging.gate.set()
        interrupt.cancel()
    quick, hung = out[0]
    assert quick.status == Status.OK and quick.error is None
    assert hung.status == Status.UNKNOWN
    assert hung.error == "interrupted by SIGTERM before it finished"
    assert recorder.kills == 1 and recorder.exits == []


class EndsWhenReleased(HangingCheck):
    """Waits for its gate, as a check waits on a hung command, then returns its (healthy)
    result: the signal's kill, which ends the command, releases it."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.returned = threading.Event()

    def collect(self, ctx: Any) -> Any:
        self.ran_on.append(threading.current_thread().name)
        output = super().collect(ctx)
        self.returned.set()
        return output


def test_work_ended_by_the_signals_own_kill_counts_as_interrupted(sources: ReplaySources) -> None:
    """The race of `…exits_3[SIGINT]` (topology OK where UNKNOWN was expected): killing the
    hung `topo -m` let the topology check finish, on NVML's data alone, before its waiter
    heard of the signal. Here the kill releases the check and waits until it has returned."""
    check = EndsWhenReleased("topology")

    def kill() -> None:
        check.gate.set()
        assert check.returned.wait(5.0)
        time.sleep(0.05)  # the work's thread has handed its result over

    interrupt = Interrupt(30.0, kill=kill, exit_now=lambda code: None)
    thread, out = run_in_thread(interrupt.guard([check]), sources)
    try:
        wait_for(lambda: bool(check.ran_on), 5.0, "the check to start")
        interrupt.trigger(signal.SIGINT)
        thread.join(5.0)
    finally:
        check.gate.set()
        interrupt.cancel()
    (ended,) = out[0]
    assert ended.status == Status.UNKNOWN, ended
    assert ended.error == "interrupted by SIGINT before it finished"


def test_a_check_not_yet_started_is_unknown_without_running(sources: ReplaySources) -> None:
    recorder = Recorder()
    interrupt = interrupt_with(recorder)
    check = FakeCheck("late")
    interrupt.trigger(signal.SIGINT)
    try:
        (late,) = run_checks(interrupt.guard([check]), sources, RunConfig())
    finally:
        interrupt.cancel()
    assert late.status == Status.UNKNOWN
    assert late.error is not None and "interrupted by SIGINT before" in late.error
    assert check.ran_on == []


def test_a_checks_own_error_passes_through_the_guard(sources: ReplaySources) -> None:
    from fakes.fake_checks import RaisingCheck

    interrupt = interrupt_with(Recorder())
    (raised,) = run_checks(interrupt.guard([RaisingCheck("boom")]), sources, RunConfig())
    assert raised.status == Status.UNKNOWN
    assert raised.error is not None and "RuntimeError: boom" in raised.error
    assert "fake_checks.py" in raised.error  # where it was raised, not the guard


def test_a_second_signal_kills_and_exits_3_at_once() -> None:
    recorder = Recorder()
    interrupt = interrupt_with(recorder)
    interrupt.trigger(signal.SIGTERM)
    interrupt.trigger(signal.SIGTERM)
    interrupt.cancel()
    assert recorder.exits == [EXIT_INTERRUPTED] and recorder.kills == 2


def test_a_run_not_done_within_the_grace_is_ended_with_3() -> None:
    recorder = Recorder()
    interrupt = interrupt_with(recorder, grace_s=0.2)
    interrupt.trigger(signal.SIGTERM)
    assert recorder.exited.wait(2.0)
    assert recorder.exits == [EXIT_INTERRUPTED] and recorder.kills == 2


def test_the_export_budget_shrinks_to_what_is_left_of_the_grace() -> None:
    interrupt = interrupt_with(Recorder(), grace_s=5.0)
    assert interrupt.time_left(15.0) == 15.0
    interrupt.trigger(signal.SIGTERM)
    interrupt.cancel()
    assert 3.0 < interrupt.time_left(15.0) <= 4.0
    assert interrupt.time_left(1.0) == 1.0


def test_a_signal_while_the_main_thread_holds_the_interrupts_lock_does_not_deadlock() -> None:
    """The handler runs `trigger` on the main thread between two bytecodes, possibly inside
    `settle` or `wait`, which hold the lock `trigger` takes (before: a plain lock, so that
    thread deadlocked on itself, the grace timer never started, and the run hung)."""
    exits: list[int] = []
    interrupt = Interrupt(30.0, kill=lambda: None, exit_now=exits.append)
    done = threading.Event()

    def main_thread_in_settle() -> None:
        with interrupt._lock:  # where the signal lands: inside settle's critical section
            interrupt.trigger(signal.SIGTERM)
        done.set()

    worker = threading.Thread(target=main_thread_in_settle, daemon=True)
    worker.start()
    try:
        assert done.wait(10.0), "trigger deadlocked on the lock its own thread held"
        assert interrupt.signal_name == "SIGTERM"
    finally:
        interrupt.cancel()
