"""One pass over the kernel log for every check that declared an interest in it.

Each check brings its own anchors and line handler (`KernelLogInterest`); the core imports no
check. The log is searched for every anchor's needle in C (`iter_candidate_batches`), so a large
log with few matches costs little more than reading it; a candidate line is one that some
interest wants (its `wants` test, else one of its needles). Where every interest says which
needles the lines it wants hold (`wants_needles`, else its anchors'), the lines near an
anchor that hold none are skipped in C too (an error storm's other lines). A handler with
`feed_text` receives the lines its own interest wants, as message and time; any other receives
every candidate line in log order (the neighbours of its own reports included) and ignores
what it does not read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from io import FileIO
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from ..contract.declarations import KernelLogInterest, LineHandler, resolve
from ..sources.scope import work_deadline
from .anchor import Anchor
from .chunks import iter_candidate_batches, kept_needles
from .file_chunks import CHUNK_BYTES, LineCounter, read_chunks
from .lines import PlainLines, iter_kernel_lines, plain_stamp, unwrap_lines
from .prefilter_pipe import WORKER_MIN_BYTES, PrefilterWorker, WorkerUnavailable, worth_a_worker

if TYPE_CHECKING:  # the scan itself needs no sources (and `scan_file` is timed from cold)
    from ..sources.base import Sources

# the distinct texts after a plain stamp whose routing is remembered (cleared when full: a log
# of all-different messages costs one dict entry a line, never more than this)
_MAX_PLANS = 4096


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


class _Route:
    """One interest in the pass: its test, its handler, and how the handler takes a line.

    A handler with a `feed_text(body, time)` method reads only the lines its interest's test
    accepts (it says so by having one) and takes each as its message and time, with no
    `KernelLine` made for it; any other handler is fed every candidate line, as a `KernelLine`.
    """

    __slots__ = ("feed", "feed_text", "test")

    def __init__(self, test: Callable[[str], bool], handler: LineHandler) -> None:
        self.test = test
        self.feed = handler.feed
        self.feed_text: Callable[[str, str | None], None] | None = getattr(
            handler, "feed_text", None
        )


class _Handlers:
    """The handlers of one pass and the tests that pick their candidate lines."""

    def __init__(self, interests: Mapping[str, KernelLogInterest]) -> None:
        self.names = list(interests)
        self.handlers: list[LineHandler] = [_made(i.handler) for i in interests.values()]
        self.anchors: tuple[Anchor, ...] = tuple(a for i in interests.values() for a in i.anchors)
        self.head_lines = max((i.head_lines for i in interests.values()), default=0)
        self.needles = _wanted_needles(interests.values())
        tests = [_test_of(i) for i in interests.values()]
        routes = [_Route(t, h) for t, h in zip(tests, self.handlers, strict=True)]
        self.own = [r for r in routes if r.feed_text is not None]
        self.rest = [r for r in routes if r.feed_text is None]
        self._plain = PlainLines()
        self._takers = _takers(self.own)
        self._plans: dict[str, _Plan] = {}

    def feed(self, raw_lines: Iterable[str]) -> None:
        if self.rest:
            line = self._line
            for raw in raw_lines:
                line(raw)
            return
        # every handler reads only the lines its interest wants: `_line`, in one loop. A line
        # with a plain `dmesg` stamp is routed by what follows its stamp, planned once for each
        # such text (an error storm repeats a few messages with new times): who wants it, and
        # its body where the stamp alone splits it.
        takers, plans, stamp_of = self._takers, self._plans, plain_stamp
        for raw in raw_lines:
            stamp = stamp_of(raw)
            if stamp is None:
                own = takers(raw)
                if own:
                    self._split(raw, own, [])
                continue
            tail = raw[stamp.end() :]
            plan = plans.get(tail)
            if plan is None:
                plan = self._plan(raw, tail)
            deliver, body, own = plan
            if body is None:  # wanted by none, or the stamp alone does not split it
                if own:
                    self._split(raw, own, [])
                continue
            deliver(body, stamp[1])

    def _plan(self, raw: str, tail: str) -> _Plan:
        """Who wants the lines whose text after a plain stamp is `tail` (asked of `raw`, one of
        them), and their body where the stamp alone splits them (`PlainLines.body_after`)."""
        own = self._takers(raw)
        body = self._plain.body_after(tail) if own else None
        plan = (_deliver_to(own), body, own)
        if len(self._plans) >= _MAX_PLANS:
            self._plans.clear()
        self._plans[tail] = plan
        return plan

    def _line(self, raw: str) -> None:
        own = [r for r in self.own if r.test(raw)]
        if own or any(r.test(raw) for r in self.rest):
            self._split(raw, own, self.rest)

    def _split(self, raw: str, own: list[_Route], rest: list[_Route]) -> None:
        for kernel_line in iter_kernel_lines((raw,)):
            for route in own:
                route.feed_text(kernel_line.body, kernel_line.time)  # type: ignore[misc]
            for route in rest:
                route.feed(kernel_line)

    def results(self) -> dict[str, Any]:
        return {name: h.finish() for name, h in zip(self.names, self.handlers, strict=True)}


# How the lines with one text after a plain stamp are routed (`_Handlers._plan`): what takes
# their body and time (the one route's `feed_text` itself where one route wants them), their
# body (None: wanted by none, or split line by line), and the routes that want them.
_Deliver = Callable[[str, "str | None"], None]
_Plan = tuple[_Deliver, "str | None", list[_Route]]


def _deliver_to(routes: list[_Route]) -> _Deliver:
    feeds = [route.feed_text for route in routes if route.feed_text is not None]
    if len(feeds) == 1:
        return feeds[0]

    def deliver(body: str, time: str | None) -> None:
        for feed in feeds:
            feed(body, time)

    return deliver


def _takers(routes: list[_Route]) -> Callable[[str], list[_Route]]:
    """The routes whose test wants a line, each test called once (the usual three spelled
    out: this runs for every candidate line). The lists given are shared: not to be changed."""
    if len(routes) == 3:
        test_one, test_two, test_three = (route.test for route in routes)
        # the routes wanting a line, by which of the three do (bits 1, 2, 4)
        chosen = [
            [r for bit, r in zip((1, 2, 4), routes, strict=True) if mask & bit] for mask in range(8)
        ]

        def takers(raw: str) -> list[_Route]:
            return chosen[
                (1 if test_one(raw) else 0) | (2 if test_two(raw) else 0)
                | (4 if test_three(raw) else 0)
            ]  # fmt: skip

        return takers
    return lambda raw: [r for r in routes if r.test(raw)]


def _made(reference: str) -> LineHandler:
    target = resolve(reference)
    handler: LineHandler = target()
    return handler


def _test_of(interest: KernelLogInterest) -> Callable[[str], bool]:
    if interest.wants is not None:
        test: Callable[[str], bool] = resolve(interest.wants)
        return test
    return _holds_any(tuple(a.needle.decode() for a in interest.anchors))


def _wanted_needles(interests: Iterable[KernelLogInterest]) -> tuple[bytes, ...] | None:
    """Byte strings of which every line some interest wants holds one (its anchors' needles
    where it has no `wants` test, else its `wants_needles`); None where an interest's test
    says nothing of what its lines hold, or a needle is not ASCII (a line's bytes hold an
    ASCII needle exactly where its text, decoded with replacement, does)."""
    needles: list[bytes] = []
    for interest in interests:
        if interest.wants is None:
            needles += (anchor.needle for anchor in interest.anchors)
        elif interest.wants_needles is None:
            return None
        else:
            needles += interest.wants_needles
    if not all(needle and needle.isascii() for needle in needles):
        return None
    return tuple(dict.fromkeys(needles))


def _holds_any(needles: tuple[str, ...]) -> Callable[[str], bool]:
    def holds(raw: str) -> bool:
        for needle in needles:
            if needle in raw:
                return True
        return False

    return holds


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
    """(lines read, each interest's handler result) over raw lines (a line a fixed-width wrap
    broke is read whole, as `scan_file` reads it: `unwrap_lines`)."""
    handlers = _Handlers(interests)
    counter = _Counter()
    handlers.feed(unwrap_lines(counter.count(lines)))
    return counter.lines, handlers.results()


class _Counter:
    def __init__(self) -> None:
        self.lines = 0

    def count(self, lines: Iterable[str]) -> Iterable[str]:
        for raw in lines:
            self.lines += 1
            yield raw


def scan_file(
    path: Path,
    interests: Mapping[str, KernelLogInterest],
    *,
    worker_from: int | None = WORKER_MIN_BYTES,
    chunk_bytes: int = CHUNK_BYTES,
) -> tuple[int, dict[str, Any]]:
    """The same as `scan_lines` over a file: its chunks are searched for the anchors in C
    (`iter_candidate_batches`), so only lines near a match reach Python. A file of
    `worker_from` bytes or more (None: none) has its pre-filter run in a worker process beside
    this one (`prefilter_pipe`), which gives the same lines. Past the deadline of the work
    under way (`work_deadline`), `ReadPastDeadline` is raised."""
    deadline = work_deadline()
    with path.open("rb", buffering=0) as handle:
        handlers = _Handlers(interests)
        if worth_a_worker(handle, kept_needles(handlers.anchors, handlers.needles), worker_from):
            try:
                return _scan_in_worker(handle, handlers, deadline, chunk_bytes)
            except WorkerUnavailable:
                handle.seek(0)  # read it here instead, from the start
                handlers = _Handlers(interests)
        counter = LineCounter()
        for batch in iter_candidate_batches(
            counter.count(read_chunks(handle, deadline, chunk_bytes)),
            handlers.anchors,
            head_lines=handlers.head_lines,
            keep=handlers.needles,
        ):
            handlers.feed(batch)
        return counter.lines, handlers.results()


def _scan_in_worker(
    handle: FileIO, handlers: _Handlers, deadline: float | None, chunk_bytes: int
) -> tuple[int, dict[str, Any]]:
    with PrefilterWorker(
        handle,
        handlers.anchors,
        head_lines=handlers.head_lines,
        keep=handlers.needles,
        deadline=deadline,
        chunk_bytes=chunk_bytes,
    ) as worker:
        for batch in worker.batches():
            handlers.feed(batch)
        return worker.lines, handlers.results()


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
