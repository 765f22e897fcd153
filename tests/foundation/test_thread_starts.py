"""A thread the system refuses (issue 29, item 9): the work it was for is UNKNOWN with the reason,
or done another way, and the run still writes its report.

Under `ulimit -v` (or a thread limit) `Thread.start` raises `RuntimeError: can't start new
thread`. Here `Thread.start` is made to raise exactly that for the threads a test names, in
process; tests/faults/test_fault_address_space.py runs the CLI under real limits.
"""

from __future__ import annotations

import json
import logging
import re
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fakes.fake_pynvml import FakePynvml
from sitscheck import cli
from sitscheck.app import Background, RunRequest, execute, installed_evidence, open_window
from sitscheck.checks.tensorrt import probe
from sitscheck.config import RunConfig
from sitscheck.daemon.loop import Notifier, serve
from sitscheck.export.settings import SignalSettings, Target
from sitscheck.export.transport import HttpSender, Outcome
from sitscheck.gpu.identity import GpuRef
from sitscheck.interrupt import Interrupt
from sitscheck.models import Report, Status
from sitscheck.sources.command import CommandResult
from sitscheck.sources.gpu_snapshot import collect_snapshot
from sitscheck.sources.nvml import Nvml
from sitscheck.sources.replay import ReplaySources
from sitscheck.threads import CannotStart

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tests" / "bundles" / "h200x2-idle-v1"
REFUSED = "can't start new thread"
LANE = re.compile(r"nvml-\d+$")  # NVML's call lanes (`DeadlineCaller`)

Refuse = Callable[[Callable[[str], bool]], None]


@pytest.fixture
def refuse(monkeypatch: pytest.MonkeyPatch) -> Refuse:
    """`refuse(wanted)`: from now on, starting a thread whose name `wanted` accepts raises
    RuntimeError("can't start new thread"), as CPython does when the system refuses one."""
    real = threading.Thread.start

    def install(wanted: Callable[[str], bool]) -> None:
        def start(self: threading.Thread) -> None:
            if wanted(self.name):
                raise RuntimeError(REFUSED)
            real(self)

        monkeypatch.setattr(threading.Thread, "start", start)

    return install


def statuses(report: Report) -> dict[str, Status]:
    return {c.name: c.status for c in report.checks}


# ---- the checks: one refused, all refused ---------------------------------------------------


def test_a_check_whose_thread_is_refused_is_unknown_and_the_others_run(refuse: Refuse) -> None:
    before = statuses(execute(RunRequest(RunConfig(), str(BUNDLE))))
    refuse(lambda name: name == "check-xid")
    report = execute(RunRequest(RunConfig(), str(BUNDLE)))
    xid = report.check("xid")
    assert xid is not None and xid.status == Status.UNKNOWN
    assert xid.error == f"not started: could not start a thread (check-xid): {REFUSED}"
    assert statuses(report) == {**before, "xid": Status.UNKNOWN}
    assert report.status == Status.UNKNOWN


def test_with_no_thread_at_all_the_cli_writes_its_report_and_exits_3(
    refuse: Refuse,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Through the command line (its signal guard too): every check UNKNOWN naming the refused
    thread, the report written to its file and stdout, exit 3, no 'internal error'."""
    refuse(lambda name: True)
    out = tmp_path / "report.json"
    argv = ["sitscheck", "run", "--from", str(BUNDLE), "-o", f"json={out}", "-o", "table"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as ended:
        cli.main()
    assert ended.value.code == 3
    printed = capsys.readouterr()
    assert "internal error" not in printed.err
    report = json.loads(out.read_text())
    assert report["status"] == "unknown" and report["checks"]
    for check in report["checks"]:
        assert check["status"] == "unknown", check["name"]
        assert REFUSED in check["error"] and "could not start a thread" in check["error"]
    assert "could not start a thread" in printed.out


# ---- the GPU snapshot (live): a refused thread fails it whole, with the reason ----------------


def _fake() -> FakePynvml:
    return FakePynvml(json.loads((BUNDLE / "nvml.json").read_text()))


def test_a_gpus_counter_thread_refused_fails_the_snapshot(refuse: Refuse) -> None:
    """Each GPU's thread starts one more for its counters: refused, no GPU's window is
    returned as if it were whole (before: the snapshot came back without those counters)."""
    nvml = Nvml(_fake(), 2.0)
    nvml.init()
    main = threading.main_thread()
    refuse(lambda name: threading.current_thread() is not main and not LANE.match(name))
    with pytest.raises(CannotStart, match=REFUSED):
        collect_snapshot(nvml, window_s=0.3, interval_s=0.1)


def test_a_refused_snapshot_is_every_gpu_checks_reason(
    refuse: Refuse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sitscheck.sources.command import CommandRunner
    from sitscheck.sources.live import LiveOptions, LiveSources

    fake = _fake()
    monkeypatch.setattr(Nvml, "load", classmethod(lambda cls, deadline_s=5.0: cls(fake, 2.0)))
    marker = tmp_path / "nvidiactl"
    marker.touch()
    options = LiveOptions(
        driver_markers=(str(marker),), sample_seconds=0.3, sys_root=str(tmp_path / "sys")
    )
    live = LiveSources(
        options, CommandRunner(path=str(tmp_path / "bin")), installed=installed_evidence
    )
    refuse(lambda name: not LANE.match(name))  # NVML starts; the snapshot's threads do not
    try:
        snapshot, reason = live.gpu_snapshot()
    finally:
        live.close()
    assert snapshot is None
    assert reason is not None and reason.startswith("the GPUs could not be sampled: could not")
    assert REFUSED in reason


# ---- what runs without its thread, and what says why ----------------------------------------


def test_the_rules_load_on_the_callers_thread_when_theirs_is_refused(refuse: Refuse) -> None:
    refuse(lambda name: name == "rules-loader")
    assert Background(lambda: 42).result() == 42


def test_the_sampling_window_opens_with_the_first_check_when_its_thread_is_refused(
    refuse: Refuse,
) -> None:
    refuse(lambda name: name == "gpu-snapshot")
    open_window(ReplaySources(BUNDLE))  # returns: the checks take the snapshot themselves


def test_a_tensorrt_probe_thread_refused_is_that_gpus_probe_not_run(
    refuse: Refuse, monkeypatch: pytest.MonkeyPatch
) -> None:
    def spawn(argv: Any, env: Any, timeout: float) -> CommandResult:
        return CommandResult(tuple(argv), 2, "", "", 0.1)  # built nothing: "failed"

    monkeypatch.setattr(probe, "tensorrt_missing", lambda: None)
    refuse(lambda name: name == "trt-probe-1")
    gpus = [GpuRef(i, f"0000:0{i}:00.0", "NVIDIA H200") for i in range(2)]
    outcome = probe.run_probe(gpus, 5.0, spawn=spawn)
    assert [(g.index, g.status) for g in outcome.gpus] == [(0, "failed"), (1, "not_run")]
    reason = outcome.gpus[1].reason
    assert reason == f"the probe could not start: could not start a thread (trt-probe-1): {REFUSED}"


def test_an_otlp_send_whose_thread_is_refused_stays_spooled(refuse: Refuse) -> None:
    url = "http://127.0.0.1:9/v1/traces"
    sender = HttpSender(
        SignalSettings("traces", url, Target("http/protobuf", url, "127.0.0.1:9", False), {})
    )
    refuse(lambda name: name == "sitscheck-otlp-http")
    result = sender.send("traces", b"", 1.0)
    assert result.outcome == Outcome.ENDPOINT_DOWN  # kept for the next run
    assert REFUSED in result.detail and "not sent" in result.detail


def test_the_daemons_watchdog_refused_leaves_the_run_going(
    refuse: Refuse, caplog: pytest.LogCaptureFixture
) -> None:
    refuse(lambda name: name == "sitscheck-watchdog")
    notifier = Notifier({"NOTIFY_SOCKET": "@sitscheck-test-none", "WATCHDOG_USEC": "100000"})
    done: list[Report] = []

    def run() -> Report:
        done.append(execute(RunRequest(RunConfig(checks=["xid"]), str(BUNDLE))))
        return done[-1]

    with caplog.at_level(logging.WARNING, logger="sitscheck.daemon"):
        serve(run, 0.01, notifier=notifier, handle_signals=False, max_runs=1)
    assert len(done) == 1
    assert any(REFUSED in r.getMessage() for r in caplog.records)


def test_a_signal_whose_grace_timer_is_refused_still_ends_the_checks(refuse: Refuse) -> None:
    refuse(lambda name: name == "sitscheck-interrupt-grace")
    interrupt = Interrupt(grace_s=0.1, kill=lambda: None, exit_now=lambda code: None)
    interrupt.trigger(signal.SIGTERM)  # before: RuntimeError out of the signal handler
    assert interrupt.triggered
    interrupt.cancel()
