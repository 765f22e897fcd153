"""The pipe between a large log's scan and its pre-filter worker (`prefilter_worker`).

The scan writes one `Request` to the worker's stdin and closes it; the worker writes frames
to its stdout: `Lines` (a batch of candidate lines, in log order) as often as it has some, then
`End` (the log's line count) or `Failed` (why it stopped). A frame is its length (4 bytes,
little-endian) and its MessagePack body (msgspec: encoded and decoded in C, strings made
directly from their bytes).
"""

from __future__ import annotations

import os
import select
import struct
import time

from msgspec import Struct, msgpack

from .anchor import Anchor
from .file_chunks import CHUNK_BYTES

_LENGTH = struct.Struct("<I")
_READ_BYTES = 1024 * 1024


class Request(Struct, frozen=True):
    """What the worker scans: the log (a descriptor it inherits, open on the file the scan
    opened, read from where it stands) and the arguments of `iter_candidate_batches`."""

    fd: int
    anchors: tuple[Anchor, ...]
    head_lines: int = 0
    keep: tuple[bytes, ...] | None = None
    chunk_bytes: int = CHUNK_BYTES


class Lines(Struct, frozen=True, tag=True):
    lines: list[str]


class End(Struct, frozen=True, tag=True):
    """The whole log was read: its lines (`file_chunks.LineCounter.lines`)."""

    lines: int


class Failed(Struct, frozen=True, tag=True):
    reason: str


Frame = Lines | End | Failed


class FrameWriter:
    """Writes frames to a blocking descriptor, each whole (a pipe's `write` may take part)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._encoder = msgpack.Encoder()
        self._buffer = bytearray()

    def write(self, frame: Frame) -> None:
        buffer = self._buffer
        self._encoder.encode_into(frame, buffer, _LENGTH.size)
        _LENGTH.pack_into(buffer, 0, len(buffer) - _LENGTH.size)
        with memoryview(buffer) as view:
            done = 0
            while done < len(buffer):
                done += os.write(self.fd, view[done:])


class FrameTimeout(Exception):
    """No whole frame came by the deadline."""


class FrameReader:
    """Reads frames from a descriptor as they come, each by a deadline (monotonic) where one
    is given; `None` at the end of the stream (a partial frame there counts as none)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._decoder = msgpack.Decoder(Frame)
        self._buffer = bytearray()
        self._start = 0
        self._poll = select.poll()  # not `select.select`: no limit on the descriptor's number
        self._poll.register(fd, select.POLLIN)

    def next(self, deadline: float | None = None) -> Frame | None:
        while True:
            frame = self._take()
            if frame is not None:
                return frame
            if not self._fill(deadline):
                return None

    def _take(self) -> Frame | None:
        buffer, start = self._buffer, self._start
        if len(buffer) - start < _LENGTH.size:
            return None
        (size,) = _LENGTH.unpack_from(buffer, start)
        body = start + _LENGTH.size
        if len(buffer) - body < size:
            return None
        with memoryview(buffer) as view, view[body : body + size] as part:
            frame = self._decoder.decode(part)
        self._start = body + size
        return frame

    def _fill(self, deadline: float | None) -> bool:
        """Reads what the pipe holds into the buffer, waiting at most until `deadline`; False
        at the end of the stream."""
        if self._start:
            del self._buffer[: self._start]
            self._start = 0
        if deadline is not None:
            left_ms = (deadline - time.monotonic()) * 1000
            if left_ms <= 0 or not self._poll.poll(left_ms):
                raise FrameTimeout("no frame by the deadline")
        data = os.read(self.fd, _READ_BYTES)
        if not data:
            return False
        self._buffer += data
        return True
