"""The kernel-log pre-filter in a worker process (`prefilter_pipe`, `prefilter_worker`): the
same candidate lines, line count and results as the scan's own pre-filter, over storms, sparse
and dense logs, cut-off and unterminated ones, bad UTF-8 and plugins' anchors; its frames; a
worker that cannot start or dies (the scan reads the log itself); its deadline; its end."""

from __future__ import annotations

import os
import sys
import threading
import time
from io import FileIO
from pathlib import Path
from typing import Any

import psutil
import pytest
import sitscheck.kernlog.needles as needles_module
import sitscheck.kernlog.prefilter_pipe as pipe
import sitscheck.kernlog.scan as scan
from sitscheck.contract import Anchor, KernelLogInterest
from sitscheck.contract.registry import discover
from sitscheck.kernlog.chunks import iter_candidate_lines, kept_needles
from sitscheck.kernlog.file_chunks import LineCounter, ReadPastDeadline, read_chunks
from sitscheck.kernlog.prefilter_frames import (
    End,
    Failed,
    FrameReader,
    FrameTimeout,
    FrameWriter,
    Lines,
    Request,
)
from sitscheck.kernlog.prefilter_worker import serve
from sitscheck.sources.scope import Scope, entered
from test_kernlog_scan import FILLER, REPORT, XID, _log, _state

CHUNK = 70_001  # lines straddle chunk boundaries


class Everything:
    """A plugin's handler without `feed_text`: it keeps every candidate line it is given."""

    def __init__(self) -> None:
        self.lines: list[Any] = []

    def feed(self, line: Any) -> None:
        self.lines.append((line.body, line.time))

    def finish(self) -> list[Any]:
        return self.lines


def wants_usb(raw: str) -> bool:
    return "usb" in raw


PLUGINS = {
    # neighbours before and after its anchor's lines
    "around": KernelLogInterest(
        anchors=(Anchor(b"IPv6", before=2, after=1),), handler=f"{__name__}:Everything"
    ),
    # a `wants` test that names no needles: every line near an anchor is a candidate
    "usb": KernelLogInterest(
        anchors=(Anchor(b"usb"),), handler=f"{__name__}:Everything", wants=f"{__name__}:wants_usb"
    ),
}


def _interests(plugins: bool) -> dict[str, KernelLogInterest]:
    shipped = scan.declared_interests(discover())
    return {**shipped, **PLUGINS} if plugins else shipped


def _storm(reports: int) -> list[str]:
    out: list[str] = []
    for n in range(reports):
        out += FILLER * 5 + ["[ 7.1] usb 1-4: new high-speed USB device number 3"] + REPORT
        if n % 50 == 0:
            out.append(XID)
    return out


LOGS: dict[str, bytes] = {
    "storm": ("\n".join(_storm(3000)) + "\n").encode(),
    "sparse": ("\n".join(_log(30_000)) + "\n").encode(),
    "dense": ("\n".join(REPORT * 6000) + "\n").encode(),
    # the log starts inside a report (`head_lines`) and its last line has no line break
    "cut_off_unterminated": "\n".join(REPORT[1:] + _log(8000) + REPORT).encode(),
    "bad_utf8": b"\n".join(
        line.encode() + (b" \xff\xfe\xc3" if n % 3 == 0 else b"")
        for n, line in enumerate(_storm(900))
    )
    + b"\n",
    "crlf": ("\r\n".join(_storm(500)) + "\r\n").encode(),
    "no_line_break": b"AER " * 50_000,
    "empty": b"",
}


def _write(tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.log"
    path.write_bytes(LOGS[name])
    return path


class _Spy(pipe.PrefilterWorker):
    """A worker that counts the scans it finished (so a scan that fell back shows)."""

    finished = 0

    def batches(self) -> Any:
        yield from super().batches()
        _Spy.finished += 1


@pytest.mark.parametrize("plugins", [False, True], ids=["shipped", "with_plugins"])
@pytest.mark.parametrize("name", sorted(LOGS))
def test_a_worker_gives_the_results_the_scan_gives_itself(
    name: str, plugins: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, name)
    interests = _interests(plugins)
    here = scan.scan_file(path, interests, worker_from=None, chunk_bytes=CHUNK)
    monkeypatch.setattr(_Spy, "finished", 0)
    monkeypatch.setattr(scan, "PrefilterWorker", _Spy)
    there = scan.scan_file(path, interests, worker_from=0, chunk_bytes=CHUNK)
    assert _Spy.finished == 1  # the worker's lines, not the scan's own after a fallback
    assert _state(there) == _state(here)
    data = LOGS[name]
    assert there[0] == data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    if name == "storm":
        assert there[1]["pcie_aer"].count == 3000 and there[1]["xid"].count == 60


@pytest.mark.parametrize("name", ["storm", "cut_off_unterminated", "bad_utf8", "empty"])
def test_the_workers_batches_are_the_pre_filters_lines(name: str, tmp_path: Path) -> None:
    path = _write(tmp_path, name)
    handlers = scan._Handlers(_interests(plugins=True))
    args: dict[str, Any] = {"head_lines": handlers.head_lines, "keep": handlers.needles}
    with path.open("rb", buffering=0) as handle:
        expected = list(
            iter_candidate_lines(read_chunks(handle, size=CHUNK), handlers.anchors, **args)
        )
        handle.seek(0)
        with pipe.PrefilterWorker(handle, handlers.anchors, chunk_bytes=CHUNK, **args) as worker:
            got = [line for batch in worker.batches() for line in batch]
    assert got == expected
    assert worker.lines == LOGS[name].count(b"\n") + (
        0 if LOGS[name].endswith(b"\n") or not LOGS[name] else 1
    )
    if name == "storm":
        assert len(got) > 3000 * len(REPORT)


def test_frames_round_trip_through_a_pipe_as_served(tmp_path: Path) -> None:
    """`serve` (the worker's body) writes, `FrameReader` reads: one `Lines` a batch, then `End`."""
    path = _write(tmp_path, "storm")
    handlers = scan._Handlers(_interests(plugins=False))
    read_end, write_end = os.pipe()
    fd = os.open(path, os.O_RDONLY)
    request = Request(fd, handlers.anchors, handlers.head_lines, handlers.needles, CHUNK)
    frames: list[Any] = []
    reader = FrameReader(read_end)
    server = threading.Thread(target=lambda: (serve(request, write_end), os.close(write_end)))
    server.start()
    while (frame := reader.next(time.monotonic() + 60)) is not None:
        frames.append(frame)
    server.join()
    os.close(read_end)
    assert isinstance(frames[-1], End) and frames[-1].lines == LOGS["storm"].count(b"\n")
    assert all(isinstance(f, Lines) and f.lines for f in frames[:-1])
    with path.open("rb", buffering=0) as handle:
        expected = list(
            iter_candidate_lines(
                read_chunks(handle, size=CHUNK),
                handlers.anchors,
                head_lines=handlers.head_lines,
                keep=handlers.needles,
            )
        )
    assert [line for f in frames[:-1] for line in f.lines] == expected


def test_a_partial_frame_at_the_end_is_none_and_a_silent_pipe_times_out() -> None:
    read_end, write_end = os.pipe()
    writer, reader = FrameWriter(write_end), FrameReader(read_end)
    writer.write(Failed("reading the log: Input/output error"))
    os.write(write_end, b"\x10\x00\x00\x00\x91")  # a length of 16, then one byte of it
    assert reader.next(time.monotonic() + 5) == Failed("reading the log: Input/output error")
    started = time.monotonic()
    with pytest.raises(FrameTimeout):
        reader.next(started + 0.2)
    assert time.monotonic() - started >= 0.2
    os.close(write_end)
    assert reader.next(time.monotonic() + 5) is None
    os.close(read_end)


def _children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if p.status() != "zombie"]


def test_a_worker_that_cannot_start_leaves_the_scan_to_read_the_log_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, "storm")
    interests = _interests(plugins=False)
    here = scan.scan_file(path, interests, worker_from=None)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-such-python"))
    assert _state(scan.scan_file(path, interests, worker_from=0)) == _state(here)


# A worker's stand-ins (`_WORKER_MODULE` names the module the worker runs): one that dies
# after its first batch, one that says it failed, one that never answers.
DYING = """
import os, sys
from msgspec import msgpack
from sitscheck.kernlog.prefilter_frames import FrameWriter, Lines, Request, Failed

def main():
    msgpack.decode(sys.stdin.buffer.read(), type=Request)
    writer = FrameWriter(sys.stdout.fileno())
    if os.environ.get("SITSCHECK_STAND_IN") == "failed":
        writer.write(Failed("reading the log: Input/output error"))
        return 1
    if os.environ.get("SITSCHECK_STAND_IN") == "silent":
        import time
        time.sleep(30)
    writer.write(Lines(["[ 5.1] pcieport 0000:16:01.0: AER: Corrected error message received"]))
    os._exit(9)

if __name__ == "__main__":
    raise SystemExit(main())
"""


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    (tmp_path / "stand_in_worker.py").write_text(DYING)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(pipe, "_WORKER_MODULE", "stand_in_worker")
    return monkeypatch


@pytest.mark.parametrize("kind", ["dies", "failed"])
def test_a_worker_that_dies_or_fails_midway_leaves_the_scan_to_read_it_from_the_start(
    kind: str, tmp_path: Path, stand_in: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, "storm")
    interests = _interests(plugins=True)
    here = scan.scan_file(path, interests, worker_from=None)
    stand_in.setenv("SITSCHECK_STAND_IN", kind)
    with path.open("rb", buffering=0) as handle:
        handlers = scan._Handlers(interests)
        with pipe.PrefilterWorker(handle, handlers.anchors, keep=handlers.needles) as worker:
            batches = worker.batches()
            if kind == "dies":
                assert len(next(batches)) == 1
            with pytest.raises(pipe.WorkerUnavailable, match=r"exit 9|Input/output error"):
                next(batches)
    # the scan fed that batch to its handlers, then read the whole log itself: counted once
    assert _state(scan.scan_file(path, interests, worker_from=0)) == _state(here)
    assert _children() == []


def test_past_its_deadline_the_worker_is_killed_and_the_scan_says_so(
    tmp_path: Path, stand_in: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, "storm")
    stand_in.setenv("SITSCHECK_STAND_IN", "silent")
    started = time.monotonic()
    with entered(Scope(deadline=started + 1.0)):
        with pytest.raises(ReadPastDeadline, match="pre-filter worker had not finished; killed"):
            scan.scan_file(path, _interests(plugins=False), worker_from=0)
    assert time.monotonic() - started < 5
    assert _children() == []


def test_the_scans_own_reading_stops_at_its_deadline(tmp_path: Path) -> None:
    path = _write(tmp_path, "sparse")
    with entered(Scope(deadline=time.monotonic() - 1)):
        with pytest.raises(ReadPastDeadline, match="not read to its end by the deadline"):
            scan.scan_file(path, _interests(plugins=False), worker_from=None)


def test_the_worker_is_this_interpreter_isolated_by_absolute_path_in_a_session_of_its_own(
    tmp_path: Path, stand_in: pytest.MonkeyPatch
) -> None:
    """Started as every child interpreter is (`child_python`): `-I`, from `/`, with the
    environment a command inherits (a secret of the parent's is not in it)."""
    path = _write(tmp_path, "storm")
    stand_in.setenv("SITSCHECK_STAND_IN", "silent")
    stand_in.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer secret")
    stand_in.chdir(tmp_path)
    handlers = scan._Handlers(_interests(plugins=False))
    with path.open("rb", buffering=0) as handle:
        with pipe.PrefilterWorker(handle, handlers.anchors):
            (child,) = _children()
            assert child.cmdline()[:2] == [sys.executable, "-I"] and os.path.isabs(sys.executable)
            assert child.cwd() == "/"
            assert "OTEL_EXPORTER_OTLP_HEADERS" not in child.environ()
            assert os.getsid(child.pid) == child.pid != os.getsid(0)
    assert _children() == []


def test_nothing_of_a_finished_scan_outlives_it(tmp_path: Path) -> None:
    path = _write(tmp_path, "storm")
    scan.scan_file(path, _interests(plugins=False), worker_from=0)
    assert _children() == []


def _big(tmp_path: Path, lines: list[str], size: int) -> Path:
    path = tmp_path / "big.log"
    block = ("\n".join(lines) + "\n").encode()
    with path.open("wb") as out:
        for _ in range(size // len(block) + 1):
            out.write(block)
    return path


@pytest.mark.parametrize(
    ("lines", "worth"),
    [
        (_storm(200), True),  # many kept lines, cut out one at a time
        (_log(20_000), False),  # a few reports in many lines
        (REPORT * 500, False),  # every line kept: decoded whole, little to overlap
    ],
    ids=["storm", "sparse", "dense"],
)
def test_a_worker_is_started_for_a_large_log_with_many_kept_lines_alone(
    lines: list[str], worth: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _big(tmp_path, lines, 3 * pipe.WORKER_MIN_BYTES)
    handlers = scan._Handlers(_interests(plugins=False))
    needles = kept_needles(handlers.anchors, handlers.needles)
    monkeypatch.setattr(pipe, "_cpus", lambda: 16)
    with path.open("rb", buffering=0) as handle:
        assert pipe.worth_a_worker(handle, needles) is worth
        assert handle.tell() == 0  # sampled in place
        assert pipe.worth_a_worker(handle, needles, None) is False
        monkeypatch.setattr(pipe, "_cpus", lambda: 1)
        assert pipe.worth_a_worker(handle, needles) is False  # one CPU: nothing side by side
        assert pipe.worth_a_worker(handle, needles, 0) is True  # asked for: always
    small = _big(tmp_path, lines, 1 << 20)
    monkeypatch.setattr(pipe, "_cpus", lambda: 16)
    with small.open("rb", buffering=0) as handle:
        assert pipe.worth_a_worker(handle, needles) is False  # too small to pay back its start


def test_a_fifo_never_gets_a_worker(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with FileIO(os.open(fifo, os.O_RDWR | os.O_NONBLOCK), "rb") as handle:  # opens at once
        assert pipe.worth_a_worker(handle, [b"AER"], 1) is False


def test_the_line_counter_counts_an_unterminated_last_line() -> None:
    counter = LineCounter()
    assert list(counter.count([b"a\nb", b"c\n", b"d"])) == [b"a\nb", b"c\n", b"d"]
    assert (counter.newlines, counter.unterminated, counter.lines) == (2, True, 3)


@pytest.mark.parametrize("automaton", [True, False], ids=["automaton", "probes"])
def test_the_density_count_is_the_pre_filters_line_hits(
    automaton: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(needles_module, "AUTOMATON", automaton and needles_module.AUTOMATON)
    handlers = scan._Handlers(_interests(plugins=True))
    needles = kept_needles(handlers.anchors, handlers.needles)
    samples = [LOGS["storm"][:200_000], LOGS["sparse"][-150_000:], LOGS["bad_utf8"], b""]
    finder = needles_module.NeedleFinder(needles)
    expected = sum(len(finder.line_hits(sample, 0, len(sample))) for sample in samples)
    assert needles_module.count_line_hits(needles, samples) == expected > 1000
