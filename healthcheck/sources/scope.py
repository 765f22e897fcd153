"""Deadlines: the one a piece of work owns (`Scope`), and what that work waits on.

`Scope`: the deadline of the work on this thread (a check's, set by the runner) and what that
work waits on right now (the command it runs or shares). A command started under a scope never
outlives what is left of it (`CommandRunner.run` clamps its timeout), and a check that still
times out is named with what it waited on. The scope is a context variable: it follows the
work onto the threads that carry it on (`contextvars.copy_context`), and code outside any
scope (a library caller, `sitscheck collect`) has none. Light to import (the kernel-log scan
reads `work_deadline` in a process of its own); the calls bounded by one are `deadline.py`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

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
