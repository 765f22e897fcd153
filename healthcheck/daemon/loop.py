"""`sitscheck daemon --interval N`: the same run as the timer's, every N seconds, as a service.

systemd `Type=notify`: `READY=1` once started, `STATUS=` after each run, `WATCHDOG=1` pings
at half of `WatchdogSec`, `STOPPING=1` on SIGTERM/SIGINT (the run in progress finishes
first; runs are bounded by their deadlines). Messages go to the `NOTIFY_SOCKET` datagram
socket (a path, or `@name` in the abstract namespace) with the standard library only.

Watchdog semantics: pings go on between runs and during a run up to `run_budget_s`; a run
that hangs longer stops the pings, and systemd kills and restarts the service after
`WatchdogSec` — what the watchdog is for. Set `WatchdogSec` above the ping interval (any
value; pings are sent at half of it) and `run_budget_s` to the run's deadline plus sampling.

A signal during a run ends that run as `sitscheck run` ends (`interrupt.interruptible`: the
children killed, unfinished checks UNKNOWN, the report delivered), then the service stops;
between runs it stops at once. Each run ends by killing and reaping every process it left
(`interrupt.sweep`, in the process that is sitscheck).

After each run one line goes to stderr (journald keeps it; run by hand, the operator sees it):
the run's number, duration and headline, and what is new or cleared (`run_line`). A run that
raises is that line saying why, and reported in `STATUS=`; the loop goes on.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from types import FrameType

from msgspec import Struct

from .. import interrupt
from ..errors import SitscheckError
from ..models import Report
from ..printable import printable
from ..threads import CannotStart, start_daemon
from .run_line import failed_line, run_line

log = logging.getLogger("sitscheck.daemon")

_STATUS_MAX = 200


class Notifier:
    """sd_notify(3) over `NOTIFY_SOCKET`; every method is a no-op without one."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.address = _socket_address(env.get("NOTIFY_SOCKET", ""))
        self.watchdog_s = _watchdog_seconds(env)
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._failed = False

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, *fields: str) -> bool:
        if self.address is None:
            return False
        payload = "\n".join(fields).encode("utf-8", "replace")
        with self._lock:
            try:
                if self._sock is None:
                    self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                    self._sock.connect(self.address)
                self._sock.sendall(payload)
            except OSError as exc:  # tried again on the next message, logged once
                if not self._failed:
                    log.warning("sd_notify to %r failed: %s", self.address, exc)
                self._failed = True
                self.close_socket()
                return False
        self._failed = False
        return True

    def ready(self, status: str) -> bool:
        return self.send("READY=1", f"STATUS={_status_text(status)}", f"MAINPID={os.getpid()}")

    def status(self, status: str) -> bool:
        return self.send(f"STATUS={_status_text(status)}")

    def watchdog(self) -> bool:
        return self.watchdog_s is not None and self.send("WATCHDOG=1")

    def stopping(self, status: str = "stopping") -> bool:
        return self.send("STOPPING=1", f"STATUS={_status_text(status)}")

    def close_socket(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None


def _socket_address(value: str) -> str | None:
    if value.startswith("@"):
        return "\0" + value[1:]
    if value.startswith("/"):
        return value
    return None  # unset, or a kind of address this implementation does not speak (vsock)


def _watchdog_seconds(env: Mapping[str, str]) -> float | None:
    usec = env.get("WATCHDOG_USEC", "")
    if not usec.isdigit() or int(usec) == 0:
        return None
    pid = env.get("WATCHDOG_PID", "")
    if pid and pid != str(os.getpid()):
        return None  # meant for another process
    return int(usec) / 1_000_000


def _status_text(text: str) -> str:
    one_line = printable(" ".join(text.split()))
    return one_line[:_STATUS_MAX]


class _Pinger:
    """Pings the watchdog from a thread while a run is within its budget."""

    def __init__(self, notifier: Notifier, interval_s: float, budget_s: float | None) -> None:
        self.notifier = notifier
        self.interval_s = interval_s
        self.budget_s = budget_s
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> _Pinger:
        try:
            self._thread = start_daemon(self._run, name="sitscheck-watchdog")
        except CannotStart as exc:  # the run goes on without them (WatchdogSec may end it)
            log.warning("watchdog pings not sent during this run: %s", exc)
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        started = time.monotonic()
        while not self._done.wait(self.interval_s):
            if self.budget_s is not None and time.monotonic() - started > self.budget_s:
                log.warning("run past its %.0fs budget: watchdog pings stopped", self.budget_s)
                return
            self.notifier.watchdog()


def serve(
    run_once: Callable[[], Report],
    interval_s: float,
    *,
    run_budget_s: float | None = 120.0,
    notifier: Notifier | None = None,
    stop: threading.Event | None = None,
    handle_signals: bool = True,
    max_runs: int | None = None,
    say: Callable[[str], None] | None = None,
) -> int:
    """Run `run_once` every `interval_s` seconds until SIGTERM/SIGINT (or `stop` is set, or
    `max_runs` runs); returns the exit status of the service (0). `say` takes each run's
    line (default: stderr)."""
    if interval_s <= 0:
        raise ValueError("interval must be positive")
    notify = notifier or Notifier()
    halt = stop or threading.Event()
    restore = _install_signals(halt) if handle_signals else None
    if handle_signals and interrupt.take_pending() is not None:
        halt.set()  # came during start-up
    ping_every = notify.watchdog_s / 2 if notify.watchdog_s else None
    try:
        notify.ready(f"started; a run every {interval_s:g}s")
        runs = 0
        while not halt.is_set():
            started = time.monotonic()
            runs += 1
            notify.status(f"running (run {runs})")
            options = _RunOptions(runs, ping_every, run_budget_s, handle_signals)
            if _one_run(run_once, notify, options, say):
                halt.set()
            if max_runs is not None and runs >= max_runs:
                break
            _wait(halt, started + interval_s, notify, ping_every)
        notify.stopping()
        return 0
    finally:
        if restore is not None:
            restore()
        notify.close_socket()


class _RunOptions(Struct, frozen=True):
    """One run of the loop: its number, and how the watchdog and signals are served."""

    number: int
    ping_every: float | None
    budget_s: float | None
    handle_signals: bool = True


def _one_run(
    run_once: Callable[[], Report],
    notify: Notifier,
    options: _RunOptions,
    say: Callable[[str], None] | None,
) -> bool:
    """One run and its line; True when a signal came during it (the service then stops)."""
    at = datetime.now(timezone.utc).isoformat(timespec="seconds")
    tell = say or _to_stderr
    began = time.monotonic()
    signalled: list[bool] = []
    try:
        with _signals_end_the_run(options.handle_signals) as signalled:
            if options.ping_every is not None:
                with _Pinger(notify, options.ping_every, options.budget_s):
                    report = run_once()
            else:
                report = run_once()
    except Exception as exc:  # one failed run must not end the service
        why = str(exc) if isinstance(exc, SitscheckError) else f"{type(exc).__name__}: {exc}"
        log.debug("sitscheck run failed", exc_info=True)
        tell(failed_line(options.number, time.monotonic() - began, why))
        notify.status(f"last run {at} failed: {why}")
        return bool(signalled)
    tell(run_line(options.number, report, time.monotonic() - began))
    notify.status(f"last run {at}: {report.headline}")
    return bool(signalled)


def _to_stderr(line: str) -> None:
    """A run's line on stderr; a closed or broken stderr costs the line, not the service."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


@contextmanager
def _signals_end_the_run(handle_signals: bool) -> Iterator[list[bool]]:
    """With signal handling: the run under `interruptible()` (a signal ends it as it ends
    `sitscheck run`); the list yielded holds True once it did. Either way every process the
    run left is killed and reaped after it (`interrupt.sweep`)."""
    signalled: list[bool] = []
    if handle_signals:
        with interrupt.interruptible() as current:  # which sweeps at its end
            try:
                yield signalled
            finally:
                if current.triggered:
                    signalled.append(True)
        return
    try:
        yield signalled
    finally:
        interrupt.sweep()


def _wait(halt: threading.Event, until: float, notify: Notifier, ping_every: float | None) -> None:
    notify.watchdog()
    while not halt.is_set():
        left = until - time.monotonic()
        if left <= 0:
            return
        halt.wait(min(left, ping_every) if ping_every else left)
        notify.watchdog()


def _install_signals(halt: threading.Event) -> Callable[[], None] | None:
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: stopping after the run in progress", signum)
        halt.set()

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}

    def restore() -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    return restore
