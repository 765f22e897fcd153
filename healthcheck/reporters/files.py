"""Writing a report file: atomically by rename, in place for what is not a regular file.

Shared by every reporter that writes a file, and by the daemon's state (its one home, so the
delivery of reports and the reporters that write files do not import each other).

A target that is not a regular file (a FIFO, a character device) is written in place without
ever blocking: opened `O_NONBLOCK` (a FIFO no process has open is refused at once) and written
as fast as its reader reads, polled against a deadline (the caller's, else the current scope's,
else `IN_PLACE_WRITE_S`): a reader that never reads costs that output, not the run.
"""

from __future__ import annotations

import errno
import os
import select
import tempfile
import time
from pathlib import Path

from ..sources.deadline import current_scope

REPORT_FILE_MODE = 0o640
# How long a write in place may wait on its reader when no deadline owns it.
IN_PLACE_WRITE_S = 10.0


def write_atomic(
    path: Path, text: str, mode: int = REPORT_FILE_MODE, deadline: float | None = None
) -> None:
    """Write a regular file by rename, so readers never see half a report; a path that is not
    a regular file (`/dev/null`, a FIFO, `/dev/stdout`) is written to in place, never replaced,
    and never past `deadline` (monotonic seconds; see the module's note)."""
    if path.exists() and not path.is_file():
        write_in_place(path, text.encode("utf-8"), _in_place_deadline(deadline))
        return
    _make_folders(path.parent)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with_suppressed_unlink(temp)
        raise


def _in_place_deadline(deadline: float | None) -> float:
    if deadline is not None:
        return deadline
    scope = current_scope()
    return scope.deadline if scope is not None else time.monotonic() + IN_PLACE_WRITE_S


def write_in_place(path: Path, data: bytes, deadline: float) -> None:
    """Write `data` to a path that is not a regular file, never blocking past `deadline`."""
    fd = _open_in_place(path)
    try:
        _write_until(fd, memoryview(data), deadline, path)
    finally:
        os.close(fd)


def _open_in_place(path: Path) -> int:
    """Open a path that is not a regular file for writing without blocking: a FIFO no one
    reads is refused (ENXIO) rather than waited on forever. The descriptor stays non-blocking."""
    try:
        return os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(
                exc.errno, "a FIFO that no process reads; not written", str(path)
            ) from None
        raise


def _write_until(fd: int, rest: memoryview, deadline: float, path: Path) -> None:
    """Write all of `rest` as the reader takes it; a reader that stops reading until the
    deadline leaves the output cut, which is an error naming how much was taken."""
    total = len(rest)
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    began = time.monotonic()
    while rest:
        try:
            rest = rest[os.write(fd, rest) :]
            continue
        except BlockingIOError:
            pass
        left = deadline - time.monotonic()
        if left <= 0:
            waited = max(time.monotonic() - began, 0.0)
            raise OSError(
                errno.ETIMEDOUT,
                f"its reader took {total - len(rest)} of {total} bytes and read no more within "
                f"{waited:.1f} s (the run's deadline); not written whole",
                str(path),
            )
        poller.poll(max(int(left * 1000), 1))


def with_suppressed_unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _make_folders(folder: Path) -> None:
    """Create missing folders one level at a time, each 0750 whatever the umask."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    for level in reversed(missing):
        level.mkdir(exist_ok=True)
        os.chmod(level, 0o750)
