"""The state file: atomic writes, a bad file moved aside with a warning, the run lock."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sitscheck.daemon import DaemonSession, StateError, apply_daemon_state
from sitscheck.daemon.cursor import KernelCursor
from sitscheck.daemon.state import (
    DaemonState,
    StateLock,
    TrackedItem,
    load_state,
    save_state,
)
from sitscheck.models import CheckResult, Evidence, Finding, Report, Severity, Status
from sitscheck.structs import json_text

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


def report(*findings: Finding) -> Report:
    return Report(
        sitscheck_version="0.1.0",
        host="node",
        started_at=T0.isoformat(),
        duration_s=1.0,
        status=Status.WARNING if findings else Status.OK,
        headline="run",
        mode="live",
        checks=[
            CheckResult(
                name="nvlink",
                status=Status.WARNING if findings else Status.OK,
                findings=list(findings),
            )
        ],
    )


def down() -> Finding:
    return Finding(
        code="nvlink.down",
        severity=Severity.WARNING,
        message="link 3 down",
        evidence=[Evidence(source="nvml")],
    )


def a_state(n_items: int = 1) -> DaemonState:
    return DaemonState(
        boot_id="B1",
        kernel_cursor=KernelCursor(boot_id="B1", seq=41, last_hash="abc"),
        items=[
            TrackedItem(
                kind="finding",
                key=f"finding|nvlink|nvlink.down|{i}|-",
                code="nvlink.down",
                check="nvlink",
                status=Status.WARNING,
                message="x" * 200,
                since=T0.isoformat(),
                last_seen=T0.isoformat(),
            )
            for i in range(n_items)
        ],
    )


def test_round_trip(tmp_path: Path) -> None:
    save_state(tmp_path, a_state())
    loaded = load_state(tmp_path)
    assert loaded.notes == []
    assert loaded.state == a_state()
    assert oct((tmp_path / "state.json").stat().st_mode & 0o777) == "0o640"


def test_state_truncated_mid_write_is_moved_aside_with_a_warning_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    text = json_text(a_state(), indent=1)
    (tmp_path / "state.json").write_text(text[: len(text) // 2])
    with caplog.at_level(logging.WARNING, logger="sitscheck.daemon"):
        marked = apply_daemon_state(report(down()), tmp_path, T0)
    assert any("moved aside" in r.getMessage() for r in caplog.records)
    assert marked.daemon is not None and any("not valid JSON" in n for n in marked.daemon.notes)
    assert marked.checks[0].findings[0].state == "new"  # the run went on from no state
    aside = list(tmp_path.glob("state.json.bad-*"))
    assert len(aside) == 1 and aside[0].read_text() == text[: len(text) // 2]
    fresh = load_state(tmp_path)  # and left a good state behind
    assert fresh.notes == [] and fresh.state is not None and len(fresh.state.items) == 1


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"format": "sitscheck-state", "version": 99, "items": []}', "version 99"),
        ('{"hello": "world"}', "not a sitscheck state"),
        ("[1, 2, 3]", "not a sitscheck state"),
        ("", "empty"),
        ('{"format": "sitscheck-state", "version": 1, "items": [{"kind": 3}]}', "valid state"),
        (b"\xff\xfe\x00garbage", "UTF-8"),
    ],
)
def test_foreign_or_broken_state_is_moved_aside(
    tmp_path: Path, content: str | bytes, why: str
) -> None:
    path = tmp_path / "state.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    loaded = load_state(tmp_path, T0)
    assert loaded.state is None
    assert len(loaded.notes) == 1 and why in loaded.notes[0]
    assert not path.exists()
    assert len(list(tmp_path.glob("state.json.bad-*"))) == 1


def test_only_the_newest_moved_aside_files_are_kept(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / "state.json").write_text("{broken")
        load_state(tmp_path, T0 + timedelta(seconds=i))
    kept = sorted(p.name for p in tmp_path.glob("state.json.bad-*"))
    assert len(kept) == 3
    assert kept[-1].startswith("state.json.bad-20261130T120005")


def test_missing_state_is_a_first_run(tmp_path: Path) -> None:
    loaded = load_state(tmp_path / "nowhere")
    assert loaded.state is None and loaded.notes == []


def test_leftover_temporary_of_a_killed_write_is_removed(tmp_path: Path) -> None:
    save_state(tmp_path, a_state())
    (tmp_path / ".state.json.abc123").write_text('{"half')
    loaded = load_state(tmp_path)
    assert loaded.state == a_state()
    assert not (tmp_path / ".state.json.abc123").exists()


SLOW_WRITER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from sitscheck.daemon.state import DaemonState, TrackedItem, save_state
    from sitscheck.models import Status

    state_dir, ready = Path(sys.argv[1]), Path(sys.argv[2])
    real_fdopen = os.fdopen

    class Slow:
        '''A file that writes half of what it is given, then hangs (until SIGKILL).'''
        def __init__(self, handle):
            self.handle = handle
        def __enter__(self):
            return self
        def __exit__(self, *exc):
            return self.handle.__exit__(*exc)
        def write(self, text):
            self.handle.write(text[: len(text) // 2])
            self.handle.flush()
            ready.write_text("writing")
            time.sleep(60)
            self.handle.write(text[len(text) // 2 :])
        def flush(self):
            self.handle.flush()
        def fileno(self):
            return self.handle.fileno()

    import builtins, io
    real_open = builtins.open

    def slow_open(file, mode="r", *a, **k):
        handle = real_open(file, mode, *a, **k)
        return Slow(handle) if "w" in mode or "a" in mode else handle

    # however the state is written (a file descriptor or a path), every write hangs half-way
    os.fdopen = lambda fd, *a, **k: Slow(real_fdopen(fd, *a, **k))
    builtins.open = io.open = slow_open
    item = dict(kind="finding", code="new.state", status=Status.CRITICAL, since="t", last_seen="t")
    items = [TrackedItem(key=f"k{i}", **item) for i in range(2000)]
    save_state(state_dir, DaemonState(boot_id="NEW", items=items))
    """
)


def test_killed_mid_write_leaves_the_old_state_readable(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    save_state(state_dir, a_state(3))
    before = (state_dir / "state.json").read_bytes()
    ready = tmp_path / "ready"
    writer = subprocess.Popen([sys.executable, "-c", SLOW_WRITER, str(state_dir), str(ready)])
    try:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert writer.poll() is None, "the writer exited before it began writing"
            assert time.monotonic() < deadline, "the writer never began writing"
            time.sleep(0.05)
        written = [p for p in state_dir.iterdir() if p.name != "state.lock"]
        assert any(p.stat().st_size > 0 for p in written)  # caught mid-write
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=10)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == -signal.SIGKILL
    assert (state_dir / "state.json").read_bytes() == before
    loaded = load_state(state_dir)
    assert loaded.notes == [] and loaded.state == a_state(3)
    assert list(state_dir.glob(".state.json.*")) == []


def test_a_second_run_waits_for_the_lock_then_gives_up(tmp_path: Path) -> None:
    with DaemonSession(tmp_path):
        started = time.monotonic()
        with pytest.raises(StateError, match="lock"), StateLock(tmp_path, timeout_s=0.3):
            pass
        assert time.monotonic() - started >= 0.3
    with StateLock(tmp_path, timeout_s=0.3):  # released with the session
        pass


def test_unwritable_state_dir_is_a_state_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(StateError, match="state directory"):
        DaemonSession(blocker / "state").open()


def test_saved_state_is_plain_json(tmp_path: Path) -> None:
    apply_daemon_state(report(down()), tmp_path, T0)
    data = json.loads((tmp_path / "state.json").read_text())
    assert data["format"] == "sitscheck-state" and data["version"] == 1
    assert data["items"][0]["code"] == "nvlink.down"
    assert data["last_run"]["status"] == "warning"
