"""What sitscheck writes as root besides a bundle (reports, the daemon's state and lock, the OTLP
spool) never goes through a link another process put in its folder: a report path linked by
another user to a device or FIFO is refused, a temporary file swapped for a link between its
creation and its rename does not have its target's mode changed, a lock file that is a link is
refused (a dangling one would have root create its target), and a spooled payload that is a
link is not read (root would send the file it names to the collector)."""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sitscheck.daemon.state import LOCK_FILE as STATE_LOCK
from sitscheck.daemon.state import StateError, StateLock
from sitscheck.export.spool import LOCK_FILE as SPOOL_LOCK
from sitscheck.export.spool import Entry, Spool, SpoolLimits, destination_id
from sitscheck.reporters.files import write_atomic

NOBODY = 65534
SECRET = "root's own file, 0600\n"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="a link of another user's needs root")

COLLECTOR = "http://collector:4318"  # the destination a spooled payload is for


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim"
    path.write_text(SECRET)
    path.chmod(0o600)
    return path


@root_only
def test_a_report_path_linked_by_another_user_to_a_fifo_is_not_written_through(
    tmp_path: Path,
) -> None:
    fifo, link = tmp_path / "device", tmp_path / "out" / "report.json"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader: the write would go in
    try:
        link.parent.mkdir()
        link.symlink_to(fifo)
        os.lchown(link, NOBODY, NOBODY)
        with pytest.raises(OSError, match=r"another user's \(uid 65534\); not followed"):
            write_atomic(link, '{"status": "ok"}\n')
        assert os.read(reader, 1024) == b""
        os.lchown(link, os.geteuid(), os.getegid())  # one of root's own (as /dev/stdout is)
        write_atomic(link, '{"status": "ok"}\n')
        assert os.read(reader, 1024) == b'{"status": "ok"}\n'
    finally:
        os.close(reader)


def swapping_mkstemp(victim: Path) -> Callable[..., tuple[int, str]]:
    """`tempfile.mkstemp`, whose file is then swapped for a link to `victim` (as a user who
    may write the folder can, between its creation and its rename)."""
    real = tempfile.mkstemp

    def mkstemp(*args: Any, **kwargs: Any) -> tuple[int, str]:
        fd, name = real(*args, **kwargs)
        os.unlink(name)
        os.symlink(victim, name)
        return fd, name

    return mkstemp


@pytest.mark.parametrize("writer", ["report", "spool"])
def test_a_temporary_file_swapped_for_a_link_does_not_change_its_targets_mode(
    writer: str, tmp_path: Path, victim: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spool = Spool(tmp_path / "spool", SpoolLimits(10, 10**6, 3600.0))
    spool.open()
    monkeypatch.setattr(tempfile, "mkstemp", swapping_mkstemp(victim))
    if writer == "report":
        write_atomic(tmp_path / "report.json", "{}\n")
    else:
        spool.put("traces", COLLECTOR, b"payload", 1_700_000_000 * 10**9)
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert victim.read_text() == SECRET


@pytest.mark.parametrize("lock", ["state", "spool"])
def test_a_lock_file_that_is_a_link_is_refused(lock: str, tmp_path: Path) -> None:
    """A dangling link: following it, root would create the file it names."""
    folder, made = tmp_path / "dir", tmp_path / "made-by-root"
    folder.mkdir()
    (folder / (STATE_LOCK if lock == "state" else SPOOL_LOCK)).symlink_to(made)
    if lock == "state":
        with pytest.raises(StateError, match="Too many levels of symbolic links"):
            StateLock(folder, timeout_s=0.1).acquire()
    else:
        with pytest.raises(OSError, match="Too many levels of symbolic links"):
            with Spool(folder, SpoolLimits(10, 10**6, 3600.0)).locked(0.1):
                pass
    assert not made.exists()


def test_a_spooled_payload_that_is_a_link_is_not_read(tmp_path: Path, victim: Path) -> None:
    spool = Spool(tmp_path / "spool", SpoolLimits(10, 10**6, 3600.0))
    spool.open()
    planted = spool.directory / (
        f"20250101T000000.000000Z-traces-{destination_id(COLLECTOR)}-0123abcd.otlp"
    )
    planted.symlink_to(victim)
    (entry,) = [e for e in spool.pending() if e.path == planted]
    assert isinstance(entry, Entry)
    with pytest.raises(OSError):
        spool.read(entry)
    real = spool.put("traces", COLLECTOR, b"payload", 1_700_000_000 * 10**9)
    assert spool.read(real) == b"payload"
