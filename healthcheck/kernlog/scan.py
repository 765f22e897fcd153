"""One pass over the kernel log for every check that declared an interest in it.

Each check brings its own anchors and line handler (`KernelLogInterest`); the core imports no
check. The log is searched for every anchor's needle in C (`iter_candidate_lines`), so a large
log with few matches costs little more than reading it; a candidate line is one that some
interest wants (its `wants` test, else one of its needles), and every handler receives every
candidate line in log order (the neighbours of its own reports included) and ignores what it
does not read.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from io import FileIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..contract.declarations import Anchor, KernelLogInterest, LineHandler, resolve
from .chunks import Chunk, iter_candidate_lines
from .lines import iter_kernel_lines

if TYPE_CHECKING:  # the scan itself needs no sources (and `scan_file` is timed from cold)
    from ..sources.base import Sources

# One buffer, refilled: small enough to stay in the CPU's cache while it is counted, decoded
# and searched (`iter_candidate_lines` passes over it several times), large enough that the
# per-chunk work in Python does not show.
CHUNK_BYTES = 256 * 1024


@dataclass(frozen=True)
class KernelLogResult:
    """One check's share of the pass: its handler's result and where the log came from."""

    source: str
    lines: int
    result: Any
    reason: str | None = None
    note: str | None = None

    @property
    def available(self) -> bool:
        return self.reason is None


class _Handlers:
    """The handlers of one pass and the test that picks their candidate lines."""

    def __init__(self, interests: Mapping[str, KernelLogInterest]) -> None:
        self.names = list(interests)
        self.handlers: list[LineHandler] = [_made(i.handler) for i in interests.values()]
        self.anchors: tuple[Anchor, ...] = tuple(a for i in interests.values() for a in i.anchors)
        self.head_lines = max((i.head_lines for i in interests.values()), default=0)
        self.wanted: Callable[[str], bool] = _union(list(interests.values()))

    def feed(self, raw_lines: Iterable[str]) -> None:
        wanted = self.wanted
        handlers = self.handlers
        for line in iter_kernel_lines(raw for raw in raw_lines if wanted(raw)):
            for handler in handlers:
                handler.feed(line)

    def results(self) -> dict[str, Any]:
        return {name: h.finish() for name, h in zip(self.names, self.handlers, strict=True)}


def _made(reference: str) -> LineHandler:
    target = resolve(reference)
    handler: LineHandler = target()
    return handler


def _union(interests: list[KernelLogInterest]) -> Callable[[str], bool]:
    tests: list[Callable[[str], bool]] = []
    for interest in interests:
        if interest.wants is not None:
            tests.append(resolve(interest.wants))
        else:
            tests.append(_holds_any(tuple(a.needle.decode() for a in interest.anchors)))
    if len(tests) == 1:
        return tests[0]
    return lambda raw: any(test(raw) for test in tests)


def _holds_any(needles: tuple[str, ...]) -> Callable[[str], bool]:
    return lambda raw: any(needle in raw for needle in needles)


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
    """(lines read, each interest's handler result) over raw lines."""
    handlers = _Handlers(interests)
    counter = _Counter()
    handlers.feed(counter.count(lines))
    return counter.lines, handlers.results()


class _Counter:
    def __init__(self) -> None:
        self.lines = 0

    def count(self, lines: Iterable[str]) -> Iterable[str]:
        for raw in lines:
            self.lines += 1
            yield raw


def scan_file(path: Path, interests: Mapping[str, KernelLogInterest]) -> tuple[int, dict[str, Any]]:
    """The same as `scan_lines` over a file: its chunks are searched for the anchors in C
    (`iter_candidate_lines`), so only lines near a match reach Python."""
    handlers = _Handlers(interests)
    counter = _ChunkCounter()
    with path.open("rb", buffering=0) as handle:
        found = iter_candidate_lines(
            counter.count(_read_chunks(handle)), handlers.anchors, head_lines=handlers.head_lines
        )
        handlers.feed(found)
    return counter.lines, handlers.results()


def _read_chunks(handle: FileIO) -> Iterator[bytearray]:
    """The file in CHUNK_BYTES pieces, all read into one buffer: each piece is searched before
    the next is read (`iter_candidate_lines` copies what it keeps), so nothing is allocated per
    chunk. The kernel is told the file is read once, front to back."""
    try:
        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
    except (AttributeError, OSError):  # not on every platform and file system
        pass
    buf = bytearray(CHUNK_BYTES)
    while size := handle.readinto(buf):
        yield buf if size == len(buf) else buf[:size]


class _ChunkCounter:
    def __init__(self) -> None:
        self.newlines = 0
        self.unterminated = False

    @property
    def lines(self) -> int:
        return self.newlines + (1 if self.unterminated else 0)

    def count(self, chunks: Iterable[Chunk]) -> Iterable[Chunk]:
        for chunk in chunks:
            self.newlines += chunk.count(b"\n")
            self.unterminated = not chunk.endswith(b"\n")
            yield chunk


class KernelLogPass:
    """The run's one pass: made on the first check's ask, shared by all that declared one."""

    def __init__(self, sources: Sources, interests: Mapping[str, KernelLogInterest]) -> None:
        self._sources = sources
        self._interests = dict(interests)
        self._lock = threading.Lock()
        self._done: dict[str, KernelLogResult] | None = None

    @property
    def interests(self) -> Mapping[str, KernelLogInterest]:
        return self._interests

    def result_for(self, name: str) -> KernelLogResult:
        with self._lock:
            if self._done is None:
                self._done = self._scan()
        return self._done[name]

    def _scan(self) -> dict[str, KernelLogResult]:
        stream = self._sources.kernel_log()
        if stream.lines is None:
            return {
                name: KernelLogResult(stream.ref, 0, None, reason=stream.reason)
                for name in self._interests
            }
        if stream.path is not None:
            count, results = scan_file(stream.path, self._interests)
        else:
            count, results = scan_lines(stream.lines, self._interests)
        return {
            name: KernelLogResult(stream.ref, count, result, note=stream.reason)
            for name, result in results.items()
        }
