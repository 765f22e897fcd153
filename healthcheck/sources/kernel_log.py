"""Read the live kernel log: /dev/kmsg, else `dmesg`, else `journalctl -k`, else a log file.

/dev/kmsg gives raw records with sequence numbers (the daemon's cursor) and needs
CAP_SYSLOG when `kernel.dmesg_restrict=1`; each fallback is tried in turn and the reason
every earlier one failed is kept, so a report can say why the log came from where it did.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from typing import IO

from .base import KernelLogStream
from .command import CommandRunner
from .files import bounded_lines, open_regular

KMSG = "/dev/kmsg"
_KMSG_RECORD_MAX = 8192
LOG_FILES = ("/var/log/kern.log", "/var/log/messages", "/var/log/syslog")


def read_kmsg(path: str | None = None) -> Iterator[str]:
    """Every record now in the ring buffer, without blocking; raises OSError if unreadable."""
    fd = os.open(path or KMSG, os.O_RDONLY | os.O_NONBLOCK)
    return _kmsg_records(fd)


def _kmsg_records(fd: int) -> Iterator[str]:
    try:
        while True:
            try:
                record = os.read(fd, _KMSG_RECORD_MAX)
            except OSError as exc:
                if exc.errno == errno.EAGAIN:
                    return
                if exc.errno == errno.EPIPE:  # overwritten while reading: continue after it
                    continue
                raise
            if not record:
                return
            yield from record.decode("utf-8", errors="replace").splitlines()
    finally:
        os.close(fd)


def open_live_kernel_log(runner: CommandRunner, timeout: float) -> KernelLogStream:
    failures: list[str] = []
    try:
        records = read_kmsg()
        first = next(records, None)
    except OSError as exc:
        failures.append(f"{KMSG}: {exc.strerror or exc}")
    else:
        lines = iter(()) if first is None else _chain(first, records)
        return KernelLogStream(KMSG, lines)
    for argv in (("dmesg",), ("journalctl", "-k", "-b", "--no-pager", "-q")):
        result = runner.run(argv, timeout)
        reason = result.failure_reason()
        if reason is None and result.stdout.strip():
            return KernelLogStream(
                " ".join(argv), iter(result.stdout.splitlines()), _note(failures)
            )
        failures.append(reason or f"`{' '.join(argv)}` printed nothing")
    for name in LOG_FILES:
        try:
            handle = open_regular(name)  # never blocks (a FIFO is refused)
        except OSError as exc:
            failures.append(f"{name}: {exc.strerror or exc}")
            continue
        return KernelLogStream(name, _file_lines(handle), _note(failures))
    return KernelLogStream(
        "kernel log", None, "no kernel log could be read: " + "; ".join(failures)
    )


def _note(failures: list[str]) -> str | None:
    return ("fell back after: " + "; ".join(failures)) if failures else None


def _chain(first: str, rest: Iterator[str]) -> Iterator[str]:
    yield first
    yield from rest


def _file_lines(handle: IO[bytes]) -> Iterator[str]:
    with handle:  # each line bounded, as in a replay and in the chunk scanner
        yield from bounded_lines(handle)
