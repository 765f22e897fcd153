"""Processes the tests start: read their pids, wait until they are gone, clean up by pid; a
clock that passes a deadline once they have shown what a test waits for."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import psutil

FAR = 3600.0  # a deadline no test reaches by waiting


def read_pids(pidfile: Path) -> list[int]:
    """Every pid the hang helper wrote ("PID CHILD_PID" per line)."""
    if not pidfile.exists():
        return []
    return [int(word) for word in pidfile.read_text(encoding="ascii").split()]


def is_gone(pid: int) -> bool:
    """True when the process no longer runs (a zombie waiting to be reaped counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def still_running(pids: list[int], within_s: float = 30.0) -> list[int]:
    """The pids still running after waiting up to `within_s` for them to go (it returns as
    soon as they are: the bound only ends a wait for processes that stay, on a loaded machine
    too)."""
    deadline = time.monotonic() + within_s
    while True:
        alive = [pid for pid in pids if not is_gone(pid)]
        if not alive or time.monotonic() >= deadline:
            return alive
        time.sleep(0.02)


def kill_by_pid(pids: list[int]) -> None:
    """SIGKILL each listed process that still runs (teardown after a failed test)."""
    for pid in pids:
        if not is_gone(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def wait_until(condition: Callable[[], object], what: str, within_s: float = 60.0) -> None:
    """Until `condition()` holds; a test fails naming `what` if it has not within `within_s`
    (a bound that only ends a wait for what never comes, on a loaded machine too)."""
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


class JumpClock:
    """time.monotonic, 2 × FAR seconds later from the moment `when()` first holds: a deadline
    FAR away (or nearer) passes then, and only then, however slow the machine is."""

    def __init__(self, when: Callable[[], bool]) -> None:
        self.when = when
        self.jumped = False

    def __call__(self) -> float:
        self.jumped = self.jumped or self.when()
        return time.monotonic() + (2 * FAR if self.jumped else 0.0)


class HeldClock:
    """time.monotonic standing still until `when()` first holds, then running on from where it
    stood: a timeout counts only from that moment, however slow the machine is to get there."""

    def __init__(self, when: Callable[[], bool]) -> None:
        self.when = when
        self.held_at = time.monotonic()
        self.lag: float | None = None  # how long it stood still, once `when()` has held

    def __call__(self) -> float:
        now = time.monotonic()
        if self.lag is None:
            if not self.when():
                return self.held_at
            self.lag = now - self.held_at
        return now - self.lag
