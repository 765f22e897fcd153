"""Writing a report file: atomically by rename, in place for what is not a regular file.

Shared by every reporter that writes a file, and by the daemon's state (its one home, so the
delivery of reports and the reporters that write files do not import each other).

A regular file is replaced, never written through: a link where it goes is replaced too, and a
temporary file's mode is set on its descriptor. A target that is not a regular file (a FIFO, a
character device; a link to one only where root or this user made the link) is written in place
without ever blocking: opened `O_NONBLOCK` (a FIFO no process has open is refused at once) and
written as fast as its reader reads, polled against a deadline (the caller's, else the current
scope's, else `IN_PLACE_WRITE_S`): a reader that never reads costs that output, not the run.
"""

from __future__ import annotations

import errno
import io
import os
import select
import stat
import tempfile
import time
from pathlib import Path
from typing import TextIO

from ..sources.scope import current_scope

REPORT_FILE_MODE = 0o640
REPORT_FOLDER_MODE = 0o750
# How long a write in place may wait on its reader when no deadline owns it.
IN_PLACE_WRITE_S = 10.0


def write_atomic(
    path: Path,
    text: str,
    mode: int = REPORT_FILE_MODE,
    deadline: float | None = None,
    folder_mode: int = REPORT_FOLDER_MODE,
) -> None:
    """Write a regular file by rename, so readers never see half a report; a path that is not
    a regular file (`/dev/null`, a FIFO, `/dev/stdout`) is written to in place, never replaced,
    and never past `deadline` (monotonic seconds; see the module's note). Folders it creates
    get `folder_mode` whatever the umask (a file another user reads needs folders it can
    enter)."""
    if path.exists() and not path.is_file():
        _refuse_foreign_link(path)
        write_in_place(path, text.encode("utf-8"), _in_place_deadline(deadline))
        return
    _make_folders(path.parent, folder_mode)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), mode)  # the file written, never what its name now is
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with_suppressed_unlink(temp)
        raise


def _refuse_foreign_link(path: Path) -> None:
    """A symbolic link that another user made is never followed to write through it (the rule
    of the kernel's `fs.protected_symlinks`): in a folder others can write, a link to a disk
    or a device planted where a report goes would have root write the report there. Links of
    root's or this user's own (`/dev/stdout`) are followed."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode) and info.st_uid not in (0, os.geteuid()):
        raise OSError(
            errno.ELOOP, f"a symbolic link of another user's (uid {info.st_uid}); not followed"
        )


def _in_place_deadline(deadline: float | None) -> float:
    if deadline is not None:
        return deadline
    scope = current_scope()
    return scope.deadline if scope is not None else time.monotonic() + IN_PLACE_WRITE_S


def write_in_place(path: Path, data: bytes, deadline: float) -> None:
    """Write `data` to a path that is not a regular file, never blocking past `deadline`."""
    fd = _open_in_place(path)
    try:
        _write_until(fd, memoryview(data), deadline, str(path))
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


def _write_until(
    fd: int, rest: memoryview, deadline: float, name: str, shared: bool = False
) -> None:
    """Write all of `rest` as the reader takes it; a reader that stops reading until the
    deadline leaves the output cut, which is an error naming how much was taken. A non-blocking
    descriptor is written as far as it takes, then polled; a `shared` one stays blocking (it
    is not ours to change: stdout), so it is polled first and given at most PIPE_BUF bytes a
    write, which a pipe that polls writable takes without blocking."""
    total = len(rest)
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    began = time.monotonic()
    limit = select.PIPE_BUF if shared else total
    writable = not shared
    while rest:
        if writable:
            try:
                rest = rest[os.write(fd, rest[:limit]) :]
                writable = not shared
            except BlockingIOError:
                writable = False
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            raise _cut_short(total - len(rest), total, began, name)
        events = poller.poll(max(int(left * 1000), 1))
        if any(flags & (select.POLLERR | select.POLLHUP) for _fd, flags in events):
            raise OSError(errno.EPIPE, "its reader closed it; not written whole", name)
        writable = bool(events)


def _cut_short(taken: int, total: int, began: float, name: str) -> OSError:
    waited = max(time.monotonic() - began, 0.0)
    return OSError(
        errno.ETIMEDOUT,
        f"its reader took {taken} of {total} bytes and read no more within {waited:.1f} s "
        "(the run's deadline); not written whole",
        name,
    )


def write_stream(stream: TextIO, text: str, deadline: float | None = None) -> None:
    """Write `text` to a text stream (the run's stdout). A pipe, FIFO or socket is written as
    its reader takes it, a pipe-buffer's worth at a time once poll says it has room, and never
    past the deadline: `sitscheck run -o json | reader-that-hangs` ends, with the output cut
    and named. A terminal, a file, or a stream with no descriptor (a test's capture) is
    written as it is."""
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
        piped = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
    except (OSError, ValueError, io.UnsupportedOperation):
        piped = False
    if not piped:
        stream.write(text)
        stream.flush()
        return
    stream.flush()
    data = text.encode(stream.encoding or "utf-8", errors=stream.errors or "strict")
    _write_until(fd, memoryview(data), _in_place_deadline(deadline), "stdout", shared=True)


def with_suppressed_unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _make_folders(folder: Path, mode: int) -> None:
    """Create missing folders one level at a time, each `mode` whatever the umask."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    for level in reversed(missing):
        level.mkdir(exist_ok=True)
        os.chmod(level, mode)
