"""One pass over the kernel log for every check that reads it (AER and Xid today).

Lines are pre-filtered with substring tests before any regex or prefix parsing, so a large
log with few matches costs little more than reading it; only candidate lines are kept.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from io import FileIO
from pathlib import Path
from typing import TYPE_CHECKING

from ..checks.pcie_aer.parse import AER_ANCHORS, HEAD_LINES, AerEvent, might_be_aer, parse_aer
from ..checks.xid.parse import XID_ANCHORS, XidEvent, might_be_xid, parse_xid
from .chunks import Chunk, iter_candidate_lines
from .lines import KernelLine, iter_kernel_lines

if TYPE_CHECKING:  # the scan itself needs no sources (and `scan_file` is timed from cold)
    from ..sources.base import Sources

# One buffer, refilled: small enough to stay in the CPU's cache while it is counted, decoded
# and searched (`iter_candidate_lines` passes over it several times), large enough that the
# per-chunk work in Python does not show.
CHUNK_BYTES = 256 * 1024


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
    with path.open("rb", buffering=0) as handle:
        found = iter_candidate_lines(
            counter.count(_read_chunks(handle)),
            AER_ANCHORS + XID_ANCHORS,
            head_lines=HEAD_LINES,
        )
        wanted = (raw for raw in found if might_be_aer(raw) or might_be_xid(raw))
        candidates = list(iter_kernel_lines(wanted))
    return counter.lines, parse_aer(candidates), parse_xid(candidates)


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
