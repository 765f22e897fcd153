"""SIGTERM and SIGINT in the middle of `sitscheck run`: finish at once with what is known.

`with interruptible() as interrupt:` around one run installs handlers for both signals. On the
first one:

- every child process is killed with SIGKILL: the commands sitscheck started (each leads its
  own process group, see `sources/command.py`) with everything in their groups, and the
  `--load` probe. A command stuck in the kernel that ignores SIGTERM is not waited for;
- every check that has not finished ends at once as UNKNOWN ("interrupted by SIGTERM before
  it finished"); checks that finished keep their results. Checks run on the runner's threads;
  `guard()` runs each check's own work (`applicable`, `collect`) on one more thread, so the
  runner's thread can give up on it the moment the signal comes (the work, like a timed-out
  check's, is abandoned);
- the rules run and the report is delivered as usual: a partial report (files are replaced
  atomically), with the interruption in its headline. The caller exits 3 (unknown).

A second signal, or a run still not finished `GRACE_S` seconds after the first (a report file
on a hung filesystem, a wedged driver in NVML shutdown), kills the children again and exits 3
at once. Outside `interruptible()` (a library caller has none) `guard()`, `note()` and
`settle()` change nothing.

Work that ends after the signal counts as interrupted, even when it ends because the signal's
kill ended the command it waited on: its result would be the kill's, not the node's.

`settle(report)`, just before the report is delivered, makes the report agree with the exit
code: a run a signal came to before then is UNKNOWN at best (exit 3; a CRITICAL found stays
CRITICAL, exit 2); a signal after it changes neither.

`own_process()` is for the process that is sitscheck (its entry point, before anything slow
is imported): a signal that comes before a run's handlers is held and handed to the run, which
then ends at once with its report; the process becomes the subreaper of its orphans, and each
run (`interruptible()`, each daemon iteration: `sweep()`) ends by killing and reaping every
process it left.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import ProbeError
from .threads import CannotStart, start_daemon

if TYPE_CHECKING:
    from .config import RunConfig
    from .contract import Check, CheckContext, CheckOutput
    from .contract.registry import BrokenCheck
    from .models import Layer, Report
    from .sources.base import Sources

T = TypeVar("T")

EXIT_INTERRUPTED = 3
GRACE_S = 5.0
SIGNALS = (signal.SIGTERM, signal.SIGINT)

_active: Interrupt | None = None
_REAP_S = 1.0


class _Process:
    """What `own_process()` set up for the process that is sitscheck (signals and children
    are the process's, not a run's): the signal that came before a run took it."""

    def __init__(self) -> None:
        self.owned = False
        self.pending: int | None = None

    def hold(self, signum: int, _frame: FrameType | None) -> None:
        if self.pending is not None:  # a second one before any run: as a second signal does
            sys.stderr.write(f"sitscheck: interrupted by {_name(signum)}\n")
            os._exit(EXIT_INTERRUPTED)
        self.pending = signum

    def take(self) -> int | None:
        signum, self.pending = self.pending, None
        return signum


_process = _Process()


def _name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


class Interrupted(ProbeError):
    """A check ended by a signal before it finished (the runner reports it UNKNOWN)."""


class Interrupt:
    """What one run knows of a signal; `trigger` is what the handler does."""

    def __init__(
        self,
        grace_s: float = GRACE_S,
        kill: Callable[[], object] | None = None,
        exit_now: Callable[[int], object] = os._exit,
    ) -> None:
        self.grace_s = grace_s
        self.signum: int | None = None
        self.at: float | None = None
        self._kill = kill or kill_children
        self._exit_now = exit_now
        # re-entrant: the handler (`trigger`) runs on the main thread, which may hold it then
        # (in `settle`, or `wait` where the runner is on it): a plain lock would deadlock there
        self._lock = threading.RLock()
        self._waiters: set[_Done] = set()
        self._cancelled = threading.Event()  # the grace period's wait ends early: run over
        self._settled = False  # the report is final: a later signal no longer changes it
        self.reported = False  # the signal came before the report was final

    @property
    def triggered(self) -> bool:
        return self.signum is not None

    @property
    def signal_name(self) -> str:
        return "no signal" if self.signum is None else _name(self.signum)

    def trigger(self, signum: int) -> None:
        """First signal: end the unfinished checks, kill the children, start the grace timer.
        Second: kill the children and exit now."""
        if self.signum is not None:
            self._kill()
            self._exit_now(EXIT_INTERRUPTED)
            return
        with self._lock:  # from here on, work that ends is interrupted (see `_Done.finish`)
            self.signum = signum
            self.at = time.monotonic()
            self.reported = not self._settled
            waiters = list(self._waiters)
        for waiter in waiters:
            waiter.set()
        self._kill()
        try:
            start_daemon(self._grace, name="sitscheck-interrupt-grace")
        except CannotStart:  # no grace period: a second signal still ends the run at once
            pass

    def _grace(self) -> None:
        if not self._cancelled.wait(self.grace_s):
            self._give_up()

    def _give_up(self) -> None:
        self._kill()
        self._exit_now(EXIT_INTERRUPTED)

    def cancel(self) -> None:
        self._cancelled.set()

    def time_left(self, budget_s: float) -> float:
        """`budget_s`, or less: what is left of the grace period (minus a margin) once
        interrupted, so a slow step (the OTLP export) cannot outlast it."""
        if self.at is None:
            return budget_s
        left = self.at + self.grace_s - time.monotonic() - 1.0
        return max(min(budget_s, left), 0.0)

    def check(self, what: str) -> None:
        if self.signum is not None:
            raise Interrupted(f"interrupted by {self.signal_name} before {what}")

    def wait(self, done: _Done) -> None:
        """Until `done` is set by the work that finished, or the signal comes (`Interrupted`)."""
        with self._lock:
            self._waiters.add(done)
        try:
            if self.signum is None:  # a signal before the registration is seen here instead
                done.wait()
        finally:
            with self._lock:
                self._waiters.discard(done)
        if not done.finished:
            self.check("it finished")

    def guard(self, checks: list[Check | BrokenCheck]) -> list[Check | BrokenCheck]:
        from .contract.registry import BrokenCheck

        return [c if isinstance(c, BrokenCheck) else _Guarded(c, self) for c in checks]

    def settle(self, report: Report) -> Report:
        """The report, final: UNKNOWN at best if the signal came before now; a later signal
        leaves it (and the exit code, which is the report's) as it is."""
        with self._lock:
            self._settled = True
            interrupted = self.signum is not None
        if not interrupted:
            return report
        from msgspec.structs import replace

        from .models import Status, worst

        status = worst([report.status, Status.UNKNOWN])
        rest = report.headline.split(" — ", 1)[-1] if " — " in report.headline else ""
        said = f"interrupted by {self.signal_name}"
        if said not in rest:
            rest = f"{said} after its checks had finished — {rest}" if rest else said
        headline = f"{status.value.upper()} — {rest}"
        return replace(report, status=status, headline=headline)


class _Done(threading.Event):
    """Set when the work ended (then `finished`) or when a signal wakes its waiter."""

    def __init__(self) -> None:
        super().__init__()
        self.finished = False

    def finish(self, interrupt: Interrupt) -> None:
        """The work ended: `finished` only if no signal came first (the signal's kill may be
        what ended it)."""
        with interrupt._lock:
            if interrupt.signum is None:
                self.finished = True
        self.set()


class _Guarded:
    """A check whose work (`applicable`, `collect`) the runner's thread can give up on the
    moment a signal comes: the work runs on one more thread, which is then abandoned."""

    def __init__(self, check: Check, interrupt: Interrupt) -> None:
        self._check = check
        self._interrupt = interrupt
        self.name: str = check.name
        self.summary: str = check.summary
        self.layer: Layer = check.layer
        self.needs_gpu: bool = check.needs_gpu
        self.metrics = check.metrics

    def __getattr__(self, name: str) -> Any:
        """The guarded check's other declarations (evidence, codes, kernel-log interest...)."""
        return getattr(self._check, name)

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        self._interrupt.check("deciding whether it applies")
        return self._run(lambda: self._check.applicable(sources, config))

    def collect(self, ctx: CheckContext) -> CheckOutput:
        self._interrupt.check("it started")
        return self._run(lambda: self._check.collect(ctx))

    def _run(self, work: Callable[[], T]) -> T:
        done = _Done()
        outcome: list[T | BaseException] = []

        def run() -> None:
            try:
                outcome.append(work())
            except BaseException as exc:  # handed to the runner's thread below
                outcome.append(exc)
            finally:
                done.finish(self._interrupt)

        # the work keeps the check's scope (its deadline, what it waits on) on its own thread;
        # one the system refuses ends the check UNKNOWN, naming it (`CannotStart`)
        start_daemon(run, name=f"check-{self.name}-work", in_context=True)
        self._interrupt.wait(done)
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        return result


def guard(checks: list[Check | BrokenCheck]) -> list[Check | BrokenCheck]:
    """The checks, interruptible when a run is under `interruptible()`; else unchanged."""
    return _active.guard(checks) if _active is not None else checks


def note(existing: str | None) -> str | None:
    """The report's note, saying the run was interrupted (when it was)."""
    if _active is None or not _active.triggered:
        return existing
    said = f"interrupted by {_active.signal_name}: checks that had not finished are UNKNOWN"
    return f"{said}; {existing}" if existing else said


def time_left(budget_s: float) -> float:
    return _active.time_left(budget_s) if _active is not None else budget_s


def settle(report: Report) -> Report:
    """The report as delivered: see `Interrupt.settle` (unchanged outside `interruptible()`)."""
    return _active.settle(report) if _active is not None else report


def own_process() -> None:
    """For the process that is sitscheck, first thing: hold SIGTERM/SIGINT until a run takes
    them, and become the subreaper of orphaned descendants. Never for a library caller."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in SIGNALS:
        signal.signal(sig, _process.hold)
    _process.owned = True
    become_subreaper()


_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux
    `PR_SET_CHILD_SUBREAPER`), so a grandchild that called `setsid` and lost its parent is
    still below it, to be killed and reaped; False where the kernel has no such thing. Here
    rather than with the commands (`sources.command`), which a replay never loads."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def release_held() -> None:
    """For a command that is not a run (`checks`, `rules`, `collect`...): signals act as they
    always do from here on; one that came during start-up ends the process now, exit 3."""
    if not _process.owned or threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signum = _process.take()
    if signum is not None:
        sys.stderr.write(f"sitscheck: interrupted by {_name(signum)}\n")
        raise SystemExit(EXIT_INTERRUPTED)


def take_pending() -> int | None:
    """The signal held since start-up (or since the last run), once."""
    return _process.take()


def sweep() -> None:
    """End of a run in the process that is sitscheck: kill and reap every process left."""
    if _process.owned and not no_children():
        from .sources.command import kill_descendants

        kill_descendants(reap_s=_REAP_S)


def no_children(proc: str = "/proc") -> bool:
    """True only where `proc` shows no process whose parent is this one: then none is below
    it either (an orphan below this subreaper is its child). The usual end of a run, whose
    commands were all reaped: the sweep then needs no process table (psutil, 30-60 ms)."""
    me = os.getpid()
    try:
        entries = os.listdir(proc)
    except OSError:
        return False
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc, entry, "stat"), "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
        except OSError:
            continue  # ended since the listing
        if len(fields) < 2 or not fields[1].isdigit():
            return False  # not the stat this reader knows: let psutil look
        if int(fields[1]) == me:
            return False
    return True


@contextmanager
def interruptible(grace_s: float = GRACE_S) -> Iterator[Interrupt]:
    """Handle SIGTERM/SIGINT for the run inside (main thread only; elsewhere it only yields)."""
    global _active
    interrupt = Interrupt(grace_s)
    if threading.current_thread() is not threading.main_thread():
        yield interrupt
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        interrupt.trigger(signum)

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    _active = interrupt
    try:
        early = _process.take()
        if early is not None:  # came during start-up: the run ends at once, with its report
            interrupt.trigger(early)
        yield interrupt
    finally:
        _active = None
        for sig, old in previous.items():
            signal.signal(sig, old)
        interrupt.cancel()
        if interrupt.triggered:
            kill_children()  # what a check's abandoned work started after the first sweep
        sweep()


def kill_children() -> list[int]:
    """SIGKILL every descendant of this process, and the process group each command leads."""
    from .sources.command import kill_descendants

    return kill_descendants()
