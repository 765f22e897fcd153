"""Deadlines: the one a piece of work owns (`Scope`), and calls that never block past one.

`Scope`: the deadline of the work on this thread (a check's, set by the runner) and what that
work waits on right now (the command it runs or shares). A command started under a scope never
outlives what is left of it (`CommandRunner.run` clamps its timeout), and a check that still
times out is named with what it waited on. The scope is a context variable: it follows the
work onto the threads that carry it on (`contextvars.copy_context`), and code outside any
scope (a library caller, `sitscheck collect`) has none.

`DeadlineCaller`: a hung driver call (NVML stuck in the kernel) cannot be interrupted from
Python. So each call runs on a daemon worker thread ("lane"); the caller waits at most the
deadline. A lane whose call overran is abandoned (it stays blocked, as a daemon thread, and
never holds up interpreter exit) and the next call gets a fresh lane. Lanes are reused
otherwise, so a sampling loop does not pay a thread start per call.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import ProbeTimeout

T = TypeVar("T")

_Job = tuple[Callable[[], Any], "Future[Any]"]

# What work under a scope keeps for itself at the end of its deadline, to turn a killed
# command into its own result (at most this, and at most a tenth of the scope's time).
SETTLE_S = 1.0


class InFlight:
    """What every scope of one run waits on now (the runner names it for a check that timed
    out waiting on another check's memo, which runs the command)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waits: Counter[str] = Counter()

    def add(self, what: str) -> None:
        with self._lock:
            self._waits[what] += 1

    def discard(self, what: str) -> None:
        with self._lock:
            self._waits[what] -= 1
            if self._waits[what] <= 0:
                del self._waits[what]

    def now(self) -> list[str]:
        with self._lock:
            return sorted(self._waits)


@dataclass
class Scope:
    """The deadline (monotonic seconds) of the work on this thread and what it waits on."""

    deadline: float
    started: float = field(default_factory=time.monotonic)
    run: InFlight | None = None
    _waits: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def work_deadline(self) -> float:
        """The deadline for a command under this scope: the scope's, less the time its owner
        keeps to turn the command's failure into its own result."""
        settle = min(SETTLE_S, (self.deadline - self.started) / 10)
        return self.deadline - max(settle, 0.0)

    def waiting_on(self) -> str | None:
        """The innermost thing the work waits on now, else what the run waits on."""
        with self._lock:
            if self._waits:
                return self._waits[-1]
        running = self.run.now() if self.run is not None else []
        return ", ".join(running) if running else None

    @contextmanager
    def waiting(self, what: str) -> Iterator[None]:
        with self._lock:
            self._waits.append(what)
        if self.run is not None:
            self.run.add(what)
        try:
            yield
        finally:
            with self._lock:
                self._waits.remove(what)
            if self.run is not None:
                self.run.discard(what)


_scope: ContextVar[Scope | None] = ContextVar("sitscheck_scope", default=None)


def current_scope() -> Scope | None:
    return _scope.get()


@contextmanager
def entered(scope: Scope) -> Iterator[Scope]:
    """Make `scope` the current one for the work inside (on this thread and its copies)."""
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)


@contextmanager
def waiting_on(what: str) -> Iterator[None]:
    """Note on the current scope (if any) that the work waits on `what`."""
    scope = _scope.get()
    if scope is None:
        yield
        return
    with scope.waiting(what):
        yield


def work_deadline(deadline: float | None = None) -> float | None:
    """The earliest of `deadline` and the current scope's deadline for work under it."""
    scope = _scope.get()
    limits = [d for d in (deadline, scope.work_deadline() if scope else None) if d is not None]
    return min(limits) if limits else None


class _Lane:
    def __init__(self, name: str) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._work, name=name, daemon=True)
        self.thread.start()

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            fn, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the caller, who decides
                future.set_exception(exc)


class DeadlineCaller:
    """A pool of lanes; `call(fn, timeout, label)` returns fn() or raises ProbeTimeout."""

    def __init__(self, name: str = "deadline") -> None:
        self._name = name
        self._idle: list[_Lane] = []
        self._lock = threading.Lock()
        self._abandoned = 0

    @property
    def abandoned(self) -> int:
        """How many lanes were left blocked in a call that overran its deadline."""
        return self._abandoned

    def call(self, fn: Callable[[], T], timeout: float, label: str) -> T:
        lane = self._take_lane()
        future: Future[T] = Future()
        lane.jobs.put((fn, future))
        try:
            result = future.result(timeout=max(timeout, 0.0))
        except FutureTimeout:
            with self._lock:
                self._abandoned += 1
            raise ProbeTimeout(f"{label} did not return within {timeout:.1f}s") from None
        except BaseException:
            self._return_lane(lane)
            raise
        self._return_lane(lane)
        return result

    def close(self) -> None:
        with self._lock:
            lanes, self._idle = self._idle, []
        for lane in lanes:
            lane.jobs.put(None)

    def _take_lane(self) -> _Lane:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            count = len(self._idle) + self._abandoned
        return _Lane(f"{self._name}-{count}")

    def _return_lane(self, lane: _Lane) -> None:
        with self._lock:
            self._idle.append(lane)
