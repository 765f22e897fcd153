"""The long-running mode: sd_notify over a real datagram socket, watchdog pings, stopping."""

from __future__ import annotations

import os
import re
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from fakes.procs import wait_until
from msgspec.structs import replace
from sitscheck.daemon import loop
from sitscheck.daemon.loop import Notifier, serve
from sitscheck.daemon.run_line import run_line
from sitscheck.models import (
    CheckResult,
    Cleared,
    Device,
    Finding,
    Report,
    Severity,
    Status,
    Verdict,
)


def a_report(headline: str = "OK — 3 of 3 checks ran") -> Report:
    return Report(
        sitscheck_version="0.1.0",
        host="node",
        started_at="2026-11-30T12:00:00+00:00",
        duration_s=0.1,
        status=Status.OK,
        headline=headline,
        mode="live",
        checks=[],
    )


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    path = str(tmp_path / "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(0.0)
    yield sock, path
    sock.close()


def received(sock: socket.socket) -> list[str]:
    messages = []
    while True:
        try:
            messages.append(sock.recv(4096).decode())
        except BlockingIOError:
            return messages


def test_ready_status_and_stopping_reach_the_socket(
    notify_socket: tuple[socket.socket, str],
) -> None:
    sock, path = notify_socket
    runs: list[int] = []

    def run_once() -> Report:
        runs.append(1)
        return a_report(f"OK — run {len(runs)}")

    notifier = Notifier({"NOTIFY_SOCKET": path})
    code = serve(run_once, 0.01, notifier=notifier, handle_signals=False, max_runs=2)
    assert code == 0 and len(runs) == 2
    messages = received(sock)
    assert messages[0].startswith("READY=1\nSTATUS=started")
    assert f"MAINPID={os.getpid()}" in messages[0]
    assert "STATUS=last run" in "\n".join(messages) and "OK — run 2" in "\n".join(messages)
    assert messages[-1].startswith("STOPPING=1")
    assert not any("WATCHDOG=1" in m for m in messages)  # no WATCHDOG_USEC: no pings


def test_watchdog_pings_during_a_run_and_between_runs(
    notify_socket: tuple[socket.socket, str],
) -> None:
    sock, path = notify_socket
    env = {"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "100000", "WATCHDOG_PID": str(os.getpid())}
    notifier = Notifier(env)
    assert notifier.watchdog_s == 0.1

    heard: list[str] = []

    def slow_run() -> Report:
        # the run lasts until several pings (0.05 s apart) have come, however slow they are
        sock.settimeout(30.0)
        try:
            while heard.count("WATCHDOG=1") < 4:
                heard.append(sock.recv(4096).decode())
        finally:
            sock.settimeout(0.0)
        return a_report()

    serve(slow_run, 0.01, notifier=notifier, handle_signals=False, max_runs=1)
    pings = [m for m in heard + received(sock) if m == "WATCHDOG=1"]
    assert len(pings) >= 4


def pinging() -> bool:
    return any(t.name == "sitscheck-watchdog" for t in threading.enumerate())


def test_a_run_past_its_budget_stops_the_pings(
    notify_socket: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the loop's clock, held until a ping has come and then moved past the budget; the run
    hangs until the test lets it end."""
    sock, path = notify_socket
    notifier = Notifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "100000"})
    now = [time.monotonic()]
    monkeypatch.setattr(loop, "time", SimpleNamespace(monotonic=lambda: now[0]))
    release = threading.Event()

    def hung_run() -> Report:
        release.wait(60)
        return a_report()

    stop = threading.Event()
    thread = threading.Thread(
        target=serve,
        args=(hung_run, 60.0),
        kwargs={"notifier": notifier, "handle_signals": False, "run_budget_s": 0.15, "stop": stop},
    )
    thread.start()
    try:
        sock.settimeout(30.0)
        early: list[str] = []  # within the budget: pinged
        while "WATCHDOG=1" not in early:
            early.append(sock.recv(4096).decode())
        sock.settimeout(0.0)
        now[0] += 1.0  # past the budget, the run still going: the pings stop
        wait_until(lambda: not pinging(), "the pings to stop", within_s=30.0)
        received(sock)
        time.sleep(0.25)  # a ping interval five times over: none comes
        late = [m for m in received(sock) if m == "WATCHDOG=1"]
    finally:
        stop.set()
        release.set()
        thread.join(timeout=30)
    assert late == []


def test_watchdog_for_another_pid_is_ignored() -> None:
    assert Notifier({"WATCHDOG_USEC": "1000000", "WATCHDOG_PID": "1"}).watchdog_s is None


def test_abstract_socket_address() -> None:
    name = f"sitscheck-test-{os.getpid()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    try:
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).send("READY=1")
        assert sock.recv(100) == b"READY=1"
    finally:
        sock.close()


def test_without_notify_socket_everything_is_a_no_op() -> None:
    notifier = Notifier({})
    assert not notifier.enabled and not notifier.ready("x") and not notifier.watchdog()


def test_a_failing_run_is_reported_and_the_loop_goes_on(
    notify_socket: tuple[socket.socket, str],
) -> None:
    sock, path = notify_socket
    calls: list[int] = []

    def flaky() -> Report:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("NVML went away")
        return a_report()

    serve(flaky, 0.01, notifier=Notifier({"NOTIFY_SOCKET": path}), handle_signals=False, max_runs=2)
    text = "\n".join(received(sock))
    assert len(calls) == 2
    assert "failed: RuntimeError: NVML went away" in text


def test_sigterm_stops_after_the_run_in_progress(notify_socket: tuple[socket.socket, str]) -> None:
    sock, path = notify_socket
    calls: list[int] = []

    def run_then_term() -> Report:
        calls.append(1)
        os.kill(os.getpid(), signal.SIGTERM)
        return a_report()

    before = signal.getsignal(signal.SIGTERM)
    code = serve(run_then_term, 3600.0, notifier=Notifier({"NOTIFY_SOCKET": path}))
    assert code == 0 and calls == [1]
    assert received(sock)[-1].startswith("STOPPING=1")
    assert signal.getsignal(signal.SIGTERM) is before


def test_interval_must_be_positive() -> None:
    with pytest.raises(ValueError):
        serve(a_report, 0, handle_signals=False)


def test_a_failed_notification_is_retried_on_the_next(tmp_path: Path) -> None:
    path = tmp_path / "late"
    notifier = Notifier({"NOTIFY_SOCKET": str(path)})
    assert not notifier.send("WATCHDOG=1")  # systemd's socket not there (yet)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    try:
        assert notifier.send("WATCHDOG=1")
        assert sock.recv(100) == b"WATCHDOG=1"
    finally:
        sock.close()
        notifier.close_socket()


def test_each_run_writes_one_line_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """Run by hand (or read in journald) the service says what each run found: its number,
    duration and headline (the status first), and why a run failed. It printed nothing."""
    calls: list[int] = []

    def flaky() -> Report:
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("NVML went away\x1b[2J")
        return a_report(f"OK — run {len(calls)}")

    serve(flaky, 0.01, notifier=Notifier({}), handle_signals=False, max_runs=3)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 3, lines
    assert re.fullmatch(r"sitscheck daemon: run 1 \(\d+\.\ds\): OK — run 1", lines[0])
    assert re.fullmatch(
        r"sitscheck daemon: run 2 \(\d+\.\ds\) failed: RuntimeError: NVML went away\\x1b\[2J",
        lines[1],
    )
    assert lines[2].startswith("sitscheck daemon: run 3 (") and lines[2].endswith("OK — run 3")


def test_the_run_line_names_what_is_new_and_cleared() -> None:
    new = Finding(
        code="xid.79", severity=Severity.CRITICAL, message="m", device=Device(index=1), state="new"
    )
    old = Finding(code="xid.13", severity=Severity.WARNING, message="m", state="persisting")
    info = Finding(code="pcie_aer.info", severity=Severity.INFO, message="m", state="new")
    report = replace(
        a_report("CRITICAL — checks: xid — since the last run: 2 new, 1 cleared"),
        status=Status.CRITICAL,
        checks=[CheckResult(name="xid", status=Status.CRITICAL, findings=[new, old, info])],
        verdicts=[Verdict(rule="gpu.lost", status=Status.CRITICAL, message="m", state="new")],
        cleared=[
            Cleared(kind="finding", code="nvlink.down", device=Device(index=0),
                    status=Status.WARNING, message="m"),
        ],
    )  # fmt: skip
    assert run_line(7, report, 2.04) == (
        "sitscheck daemon: run 7 (2.0s): CRITICAL — checks: xid — since the last run: 2 new, "
        "1 cleared; new: xid.79 (GPU 1), gpu.lost; cleared: nvlink.down (GPU 0)"
    )
