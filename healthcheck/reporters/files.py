"""Writing a report file: atomically by rename, in place for what is not a regular file.

Shared by every reporter that writes a file, and by the daemon's state (its one home, so the
delivery of reports and the reporters that write files do not import each other).
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

REPORT_FILE_MODE = 0o640


def write_atomic(path: Path, text: str, mode: int = REPORT_FILE_MODE) -> None:
    """Write a regular file by rename, so readers never see half a report; a path that is not
    a regular file (`/dev/null`, a FIFO, `/dev/stdout`) is written to in place, never replaced."""
    if path.exists() and not path.is_file():
        with os.fdopen(_open_in_place(path), "w", encoding="utf-8") as handle:
            handle.write(text)
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


def _open_in_place(path: Path) -> int:
    """Open a path that is not a regular file for writing without blocking: a FIFO no one
    reads is refused (ENXIO) rather than waited on forever; writes then block as usual."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(
                exc.errno, "a FIFO that no process reads; not written", str(path)
            ) from None
        raise
    os.set_blocking(fd, True)
    return fd


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
