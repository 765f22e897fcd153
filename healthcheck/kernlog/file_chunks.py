"""A log file read in chunks into one buffer, and its lines counted as they pass.

Shared by the scan (`scan.scan_file`) and its pre-filter worker (`prefilter_worker`), which
reads the same file in a process of its own: both read it the same way.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from io import FileIO

from ..errors import ProbeTimeout
from .chunks import Chunk, count_newlines

# One buffer, refilled: small enough to stay in the CPU's cache while it is counted, decoded
# and searched (`iter_candidate_batches` passes over it several times), large enough that the
# per-chunk work in Python does not show.
CHUNK_BYTES = 256 * 1024


class ReadPastDeadline(ProbeTimeout):
    """The file was not read to its end by the deadline its reader was given (the check that
    asked is UNKNOWN with this reason)."""


def read_chunks(
    handle: FileIO, deadline: float | None = None, size: int = CHUNK_BYTES
) -> Iterator[bytearray]:
    """The file in pieces of `size` bytes, all read into one buffer: each piece is searched before
    the next is read (`iter_candidate_batches` copies what it keeps), so nothing is allocated per
    chunk. The kernel is told the file is read once, front to back. Past `deadline`
    (monotonic), the next read raises `ReadPastDeadline` instead."""
    try:
        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
    except (AttributeError, OSError):  # not on every platform and file system
        pass
    buf = bytearray(size)
    while True:
        if deadline is not None and time.monotonic() >= deadline:
            raise ReadPastDeadline(
                "the kernel log was not read to its end by the deadline "
                f"({handle.tell()} bytes read)"
            )
        got = handle.readinto(buf)
        if not got:
            return
        yield buf if got == len(buf) else buf[:got]


class LineCounter:
    """Counts the lines of the chunks that pass through `count`: its line breaks, and one more
    where the last chunk does not end with one."""

    def __init__(self) -> None:
        self.newlines = 0
        self.unterminated = False

    @property
    def lines(self) -> int:
        return self.newlines + (1 if self.unterminated else 0)

    def count(self, chunks: Iterable[Chunk]) -> Iterable[Chunk]:
        for chunk in chunks:
            self.newlines += count_newlines(chunk)
            self.unterminated = not chunk.endswith(b"\n")
            yield chunk
