"""The pre-filter of a large log's scan, in a process of its own (`prefilter_pipe` starts it).

It reads the log from the descriptor it inherits, finds the candidate lines
(`iter_candidate_batches`, the same code the scan runs in its own process otherwise) and
writes them to its stdout as frames (`prefilter_frames`), while the scan's process routes and
parses the batches before: the two halves of a dense log's cost run side by side. It imports
only the pre-filter; it never outlives its reader (a write to a pipe nobody reads ends it)
and is killed with the run's other children.
"""

from __future__ import annotations

import sys
from io import FileIO

from msgspec import msgpack

from .chunks import iter_candidate_batches
from .file_chunks import LineCounter, read_chunks
from .prefilter_frames import End, Failed, FrameWriter, Lines, Request


def main() -> int:
    """Read the request from stdin, scan, write the frames to stdout; 0 when the log was read
    to its end (or its reader went away), 1 when it could not be."""
    request = msgpack.decode(sys.stdin.buffer.read(), type=Request)
    return serve(request, sys.stdout.fileno())


def serve(request: Request, out_fd: int) -> int:
    writer = FrameWriter(out_fd)
    counter = LineCounter()
    try:
        with FileIO(request.fd, "rb", closefd=True) as handle:
            for batch in iter_candidate_batches(
                counter.count(read_chunks(handle, size=request.chunk_bytes)),
                request.anchors,
                head_lines=request.head_lines,
                keep=request.keep,
            ):
                if batch:
                    writer.write(Lines(batch))
        writer.write(End(counter.lines))
    except BrokenPipeError:  # the scan stopped reading: nothing more to do
        return 0
    except OSError as exc:
        try:
            writer.write(Failed(f"reading the log: {exc}"))
        except BrokenPipeError:
            return 0
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
