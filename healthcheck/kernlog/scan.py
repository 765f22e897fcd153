"""One pass over the kernel log for every check that declared an interest in it.

Each check brings its own anchors and line handler (`KernelLogInterest`); the core imports no
check. The log is read once, a block of lines at a time (`candidates`); each interest takes
the lines its anchors want that hold one of the words it `wants`, and its handler is fed each one's
message and time (`feed(text, time)`, in log order); `finish()` gives the handler's result.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from ..contract.declarations import KernelLogInterest, LineHandler, resolve
from ..sources.files import READ_CHUNK
from ..sources.scope import work_deadline
from .candidates import LogLines, Windows, file_blocks, read_chunks
from .lines import kernel_messages

if TYPE_CHECKING:  # the scan itself needs no sources (and `scan_file` is timed from cold)
    from ..sources.base import Sources


class KernelLogResult(Struct, frozen=True):
    """One check's share of the pass: its handler's result and where the log came from."""

    source: str
    lines: int
    result: Any
    reason: str | None = None
    note: str | None = None

    @property
    def available(self) -> bool:
        return self.reason is None


def _scan(
    blocks: Iterable[bytes], interests: Mapping[str, KernelLogInterest]
) -> tuple[int, dict[str, Any]]:
    """(lines read, each interest's handler result) over blocks of whole lines."""
    handlers: dict[str, LineHandler] = {n: resolve(i.handler)() for n, i in interests.items()}
    feeds = [
        (Windows(i.anchors, i.head_lines, i.wants), handlers[n].feed) for n, i in interests.items()
    ]
    lines = LogLines(anchor.needle for i in interests.values() for anchor in i.anchors)
    for block in lines.blocks(blocks):
        for windows, feed in feeds:
            for body, time in kernel_messages(windows.kept(block)):
                feed(body, time)
    return lines.count, {name: handler.finish() for name, handler in handlers.items()}


def declared_interests(checks: Iterable[Any]) -> dict[str, KernelLogInterest]:
    """The kernel-log interests the checks declare, by check name."""
    from ..contract.declarations import declaration_of

    found: dict[str, KernelLogInterest] = {}
    for check in checks:
        if hasattr(check, "collect"):
            interest = declaration_of(check).kernel_log
            if interest is not None:
                found[check.name] = interest
    return found


def scan_lines(
    lines: Iterable[str], interests: Mapping[str, KernelLogInterest]
) -> tuple[int, dict[str, Any]]:
    """(lines read, each interest's handler result) over raw lines, with or without their
    line breaks: what `scan_file` gives of a file of these lines (taken 4,096 at a time)."""
    given = iter(lines)
    blocks = iter(lambda: [line.removesuffix("\n") for line in islice(given, 4096)], [])
    return _scan(("\n".join(b).encode(errors="surrogatepass") for b in blocks), interests)


def scan_file(
    path: Path, interests: Mapping[str, KernelLogInterest], *, chunk_bytes: int = READ_CHUNK
) -> tuple[int, dict[str, Any]]:
    """`scan_lines` over a file, read in chunks (issue 29: below glibc's mmap threshold). Past
    the deadline of the work under way (`work_deadline`), `ReadPastDeadline` is raised."""
    with path.open("rb", buffering=0) as handle:
        chunks = read_chunks(handle, work_deadline(), chunk_bytes)
        return _scan(file_blocks(chunks), interests)


class KernelLogPass:
    """The run's one pass: made on the first check's ask, shared by all that declared one."""

    def __init__(self, sources: Sources, interests: Mapping[str, KernelLogInterest]) -> None:
        self._sources, self._interests = sources, dict(interests)
        self._lock = threading.Lock()
        self._done: dict[str, KernelLogResult] | None = None

    def result_for(self, name: str) -> KernelLogResult:
        with self._lock:
            if self._done is None:
                self._done = self._scan()
        return self._done[name]

    def _scan(self) -> dict[str, KernelLogResult]:
        stream, interests = self._sources.kernel_log(), self._interests
        if stream.lines is None:
            return {n: KernelLogResult(stream.ref, 0, None, stream.reason) for n in interests}
        if stream.path is not None:
            count, results = scan_file(stream.path, interests)
        else:
            count, results = scan_lines(stream.lines, interests)
        return {
            name: KernelLogResult(stream.ref, count, result, note=stream.reason)
            for name, result in results.items()
        }
