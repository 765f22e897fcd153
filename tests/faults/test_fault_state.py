"""The daemon state directory read-only or full, and the state file corrupt, through the CLI
(`sitscheck run --daemon`), replaying the recorded bundle."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from fault_expect import CHECKS
from fault_node import BUNDLE, Invoked, invoke, refuse_writes

RUN = ("run", "--from", str(BUNDLE), "--daemon", "-o", "json")


def run_daemon(state: Path) -> Invoked:
    return invoke(*RUN, "--state-dir", str(state))


def assert_refused_cleanly(done: Invoked, state: Path, cause: str) -> None:
    assert done.code == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert str(state) in done.stderr and cause in done.stderr, done.stderr
    assert done.elapsed < 10.0


def assert_report_delivered(done: Invoked, cause: str) -> None:
    report = done.report()
    assert [c["name"] for c in report["checks"]] == list(CHECKS)
    assert done.code == 3
    assert cause in done.stderr + json.dumps(report)


@pytest.fixture
def state(tmp_path: Path) -> Path:
    folder = tmp_path / "state"
    folder.mkdir()
    return folder


# ---- read-only ------------------------------------------------------------------------------


def test_read_only_state_dir_is_refused_naming_it(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse_writes(monkeypatch.setattr, state, errno.EROFS, new_only=False)
    done = run_daemon(state)
    assert_refused_cleanly(done, state, "Read-only file system")


def test_read_only_state_dir_still_delivers_the_report(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse_writes(monkeypatch.setattr, state, errno.EROFS, new_only=False)
    assert_report_delivered(run_daemon(state), "Read-only file system")


# ---- full ----------------------------------------------------------------------------------


def test_full_state_dir_keeps_the_old_state_whole(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run_daemon(state)
    assert first.code == 0, first.stderr
    before = (state / "state.json").read_bytes()
    refuse_writes(monkeypatch.setattr, state, errno.ENOSPC, new_only=True)
    done = run_daemon(state)
    assert_refused_cleanly(done, state, "No space left on device")
    assert (state / "state.json").read_bytes() == before  # atomic: the old state is intact
    assert sorted(p.name for p in state.iterdir()) == ["state.json", "state.lock"]


def test_full_state_dir_still_delivers_the_report(
    state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run_daemon(state).code == 0
    refuse_writes(monkeypatch.setattr, state, errno.ENOSPC, new_only=True)
    assert_report_delivered(run_daemon(state), "No space left on device")


# ---- corrupt -------------------------------------------------------------------------------


def test_corrupt_state_file_is_moved_aside_and_the_run_goes_on(state: Path) -> None:
    garbage = b"\x00" * 512 + b'{"format": "sitscheck-state", "version": 1, "items": [\xff\xfe'
    (state / "state.json").write_bytes(garbage)
    done = run_daemon(state)

    assert done.code == 0, done.stdout + done.stderr
    report = done.report()
    assert [c["name"] for c in report["checks"]] == list(CHECKS)
    (note,) = report["daemon"]["notes"]
    assert "not UTF-8 text" in note and "moved aside" in note
    (aside,) = state.glob("state.json.bad-*")
    assert aside.read_bytes() == garbage  # kept for a post-mortem
    assert json.loads((state / "state.json").read_text())["format"] == "sitscheck-state"
