"""One pass over the kernel log for every check that reads it (AER and Xid today).

Lines are pre-filtered with substring tests before any regex or prefix parsing, so a large
log with few matches costs little more than reading it; only candidate lines are kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..checks.pcie_aer.parse import AER_ANCHORS, HEAD_LINES, AerEvent, might_be_aer, parse_aer
from ..checks.xid.parse import XID_ANCHORS, XidEvent, might_be_xid, parse_xid
from ..sources.base import Sources
from .lines import KernelLine, iter_candidate_lines, iter_kernel_lines

CHUNK_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class KernelEvents:
    source: str
    lines: int
    aer: list[AerEvent]
    xid: list[XidEvent]
    reason: str | None = None
    note: str | None = None

    @property
    def available(self) -> bool:
        return self.reason is None


def scan_lines(lines: Iterable[str]) -> tuple[int, list[AerEvent], list[XidEvent]]:
    counter = _Counter()
    wanted = (raw for raw in counter.count(lines) if might_be_aer(raw) or might_be_xid(raw))
    candidates: list[KernelLine] = list(iter_kernel_lines(wanted))
    return counter.lines, parse_aer(candidates), parse_xid(candidates)


class _Counter:
    def __init__(self) -> None:
        self.lines = 0

    def count(self, lines: Iterable[str]) -> Iterable[str]:
        for raw in lines:
            self.lines += 1
            yield raw


def scan_file(path: Path) -> tuple[int, list[AerEvent], list[XidEvent]]:
    """The same as `scan_lines` over a file: its chunks are searched for the parsers' anchors
    in C (`iter_candidate_lines`), so only lines near a match reach Python."""
    counter = _ChunkCounter()
    with path.open("rb") as handle:
        found = iter_candidate_lines(
            counter.count(iter(lambda: handle.read(CHUNK_BYTES), b"")),
            AER_ANCHORS + XID_ANCHORS,
            head_lines=HEAD_LINES,
        )
        wanted = (raw for raw in found if might_be_aer(raw) or might_be_xid(raw))
        candidates = list(iter_kernel_lines(wanted))
    return counter.lines, parse_aer(candidates), parse_xid(candidates)


class _ChunkCounter:
    def __init__(self) -> None:
        self.newlines = 0
        self.unterminated = False

    @property
    def lines(self) -> int:
        return self.newlines + (1 if self.unterminated else 0)

    def count(self, chunks: Iterable[bytes]) -> Iterable[bytes]:
        for chunk in chunks:
            self.newlines += chunk.count(b"\n")
            self.unterminated = not chunk.endswith(b"\n")
            yield chunk


def kernel_events(sources: Sources) -> KernelEvents:
    return sources.memo("kernel_events", lambda: _scan(sources))


def _scan(sources: Sources) -> KernelEvents:
    stream = sources.kernel_log()
    if stream.lines is None:
        return KernelEvents(stream.ref, 0, [], [], reason=stream.reason)
    if stream.path is not None:
        count, aer, xid = scan_file(stream.path)
    else:
        count, aer, xid = scan_lines(stream.lines)
    return KernelEvents(stream.ref, count, aer, xid, note=stream.reason)
