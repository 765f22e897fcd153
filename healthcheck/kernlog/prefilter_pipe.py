"""A large log's pre-filter run in a worker process beside the scan (`prefilter_worker`).

A dense log (an error storm) costs the scan about as much to find its candidate lines (the
pre-filter: searching, cutting and decoding lines) as to route and parse them. Where the log
is a regular file of at least `WORKER_MIN_BYTES` and the process may run on more than one CPU,
the pre-filter runs in a worker of its own and the two halves run side by side; the lines,
their order and the line count are the same either way (the worker runs the same
`iter_candidate_batches` over the same file).

The worker is this interpreter started again, isolated (`child_python`: `-I`, from `/`, an
explicit environment, this process's import path), in a session of its own like every command
sitscheck runs (so the run's end and its interruption kill it: `command.kill_descendants`); it
inherits the log's descriptor, so it reads the very file the scan opened. Its batches are read
by the scan's deadline: past it the worker is killed and `ReadPastDeadline` raised. A worker
that cannot start, or that ends before the end of the log, raises `WorkerUnavailable`: the scan
then reads the log itself, from the start. Closing the pipe (the scan's end, or its error)
kills and reaps the worker.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator, Sequence
from io import FileIO
from types import TracebackType

from msgspec import msgpack

from ..sources import child_python
from .anchor import Anchor
from .chunks import DENSE_BYTES
from .file_chunks import CHUNK_BYTES, ReadPastDeadline
from .needles import count_line_hits
from .prefilter_frames import End, Failed, FrameReader, FrameTimeout, Lines, Request

# A log this large or larger, with at least this many lines the scan keeps, gets a worker:
# below either the worker's start (an interpreter and the pre-filter's imports, 40-90 ms)
# costs more than running the two halves side by side saves.
WORKER_MIN_BYTES = 8 * 1024 * 1024
WORKER_MIN_LINES = 40_000
_SAMPLES = 8  # windows of the log in which those lines are counted (`dense_enough`)
_SAMPLE_BYTES = 128 * 1024
_PIPE_BYTES = 1024 * 1024  # the pipe's capacity asked for: fewer waits on a full pipe
_REAP_S = 1.0
_WORKER_MODULE = f"{__package__}.prefilter_worker"


class WorkerUnavailable(Exception):
    """The worker could not start, or ended before the end of the log (the reason)."""


def worth_a_worker(
    handle: FileIO, needles: Sequence[bytes], min_bytes: int | None = WORKER_MIN_BYTES
) -> bool:
    """Whether the log open on `handle` gets a worker: a regular file of `min_bytes` or more
    (None: never; 0: always, where an interpreter can be started again) in which lines holding
    one of `needles` (the lines the scan keeps) look to be many (`dense_enough`), read by a
    process that may run on more than one CPU."""
    if min_bytes is None or not child_python.available():
        return False
    if min_bytes == 0:
        return True
    try:
        status = os.fstat(handle.fileno())
    except OSError:
        return False
    if not stat.S_ISREG(status.st_mode) or status.st_size < min_bytes or _cpus() < 2:
        return False
    return dense_enough(handle.fileno(), status.st_size, needles)


def dense_enough(fd: int, size: int, needles: Sequence[bytes]) -> bool:
    """Whether the file looks to hold `WORKER_MIN_LINES` lines or more with a needle, cut out
    one at a time (where they are sparser than one every `DENSE_BYTES`: denser runs of them
    are decoded whole, which costs the pre-filter little): counted in `_SAMPLES` windows
    spread evenly over it (read in place: the file's offset stays), and scaled to its size.
    Elsewhere one half of the work is much the larger, and the worker's start is not paid
    back. A storm that fills any window makes the estimate large."""
    if not needles:
        return False
    window = min(_SAMPLE_BYTES, size)
    step = (size - window) // max(_SAMPLES - 1, 1)
    try:
        samples = [os.pread(fd, window, at) for at in sorted({n * step for n in range(_SAMPLES)})]
    except OSError:
        return False
    hits = count_line_hits(needles, samples)
    sampled = sum(len(sample) for sample in samples)
    many = hits * size >= WORKER_MIN_LINES * sampled
    return sampled > 0 and many and hits * DENSE_BYTES <= sampled


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on every platform
        return os.cpu_count() or 1


class PrefilterWorker:
    """One worker for one scan: `batches()` are its candidate lines, `lines` the log's line
    count once they are all read. Use it as a context manager: leaving it ends the worker."""

    def __init__(
        self,
        handle: FileIO,
        anchors: Sequence[Anchor],
        *,
        head_lines: int = 0,
        keep: Sequence[bytes] | None = None,
        deadline: float | None = None,
        chunk_bytes: int = CHUNK_BYTES,
    ) -> None:
        self.deadline = deadline
        self.lines = 0
        request = Request(
            handle.fileno(),
            tuple(anchors),
            head_lines,
            None if keep is None else tuple(keep),
            chunk_bytes,
        )
        import subprocess  # here, not above: a scan that starts no worker never imports it

        try:
            self._proc = child_python.start(
                _WORKER_MODULE,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                pass_fds=(handle.fileno(),),
                start_new_session=True,
            )
        except OSError as exc:
            raise WorkerUnavailable(f"could not start: {exc}") from exc
        assert self._proc.stdin is not None and self._proc.stdout is not None
        try:
            self._proc.stdin.write(msgpack.encode(request))
            self._proc.stdin.close()
        except OSError as exc:  # it ended at once
            self.close()
            raise WorkerUnavailable(f"ended before it was asked: {exc}") from exc
        set_size = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
        try:
            if set_size is not None:
                fcntl.fcntl(self._proc.stdout.fileno(), set_size, _PIPE_BYTES)
        except OSError:  # a capacity above the system's limit: the default one will do
            pass
        self._reader = FrameReader(self._proc.stdout.fileno())

    def __enter__(self) -> PrefilterWorker:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def batches(self) -> Iterator[list[str]]:
        """The candidate lines, batch by batch, in log order; sets `lines` at the end."""
        while True:
            try:
                frame = self._reader.next(self.deadline)
            except FrameTimeout:
                self.close()
                raise ReadPastDeadline(
                    "the kernel log was not read to its end by the deadline (its pre-filter "
                    "worker had not finished; killed)"
                ) from None
            if isinstance(frame, Lines):
                yield frame.lines
            elif isinstance(frame, End):
                self.lines = frame.lines
                return
            else:
                reason = frame.reason if isinstance(frame, Failed) else self._ended()
                self.close()
                raise WorkerUnavailable(reason)

    def close(self) -> None:
        """Kill the worker (a no-op once it has ended) and reap it."""
        if self._proc.returncode is None:
            self._proc.kill()
            self._reap()
        if self._proc.stdout is not None:
            self._proc.stdout.close()

    def _ended(self) -> str:
        code = self._reap()
        if code is None:
            return "its output ended before the end of the log"
        return f"it ended (exit {code}) before the end of the log"

    def _reap(self) -> int | None:
        """Its exit status, waited for a short while (None: still there, stuck in the kernel;
        the run's end reaps it)."""
        import subprocess

        try:
            return self._proc.wait(timeout=_REAP_S)
        except subprocess.TimeoutExpired:
            return None
