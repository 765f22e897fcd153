"""Calls that never block past a deadline (`DeadlineCaller`).

A hung driver call (NVML stuck in the kernel) cannot be interrupted from Python. So each call
runs on a daemon worker thread ("lane"); the caller waits at most the deadline. A lane whose
call overran is abandoned (it stays blocked, as a daemon thread, and never holds up
interpreter exit) and the next call gets a fresh lane. Lanes are reused otherwise, so a
sampling loop does not pay a thread start per call. The deadline a piece of work owns is its
`Scope` (`scope.py`). A lane the system refuses (`ulimit -v`) is `CannotStart`: the call is
not made, and its caller names why (NVML: the reading is an error, never a value).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from ..errors import ProbeTimeout
from ..threads import start_daemon

T = TypeVar("T")

_Job = tuple[Callable[[], Any], "Future[Any]"]


class _Lane:
    def __init__(self, name: str) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.thread = start_daemon(self._work, name=name)

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
