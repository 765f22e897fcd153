"""Run external commands safely: argv only, under the caller's deadline, output capped.

Every command sitscheck runs goes through `CommandRunner.run`. No shell ever; `LC_ALL=C` so the
output is in the form the parsers know; run from `/` (`WORKING_DIR`), never from the operator's
working directory; an environment of what it may inherit (`child_environment`). A Python child
is started through `child_python`, isolated. Its timeout never outlives the deadline of the
work that asked for it (`scope.work_deadline`: the caller's own, or the check's scope). Output
is read from pipes as it is written and capped there: a command that prints past the cap is
killed at once (as RLIMIT_FSIZE would), so a runaway one costs neither memory nor disk. On a
timeout the command's process group and every process below it (those that left the group with
`setsid` included) get SIGKILL; a process stuck in the kernel (D state) that does not die is
abandoned after a short grace, never waited on forever.

`kill_descendants` is for the process that is sitscheck (the CLI), which is the subreaper of
its commands' orphans (`interrupt.become_subreaper`): each run ends by killing and reaping them.
"""

from __future__ import annotations

import dataclasses
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence

from msgspec import Struct

from .scope import waiting_on, work_deadline

DEFAULT_OUTPUT_CAP = 16 * 1024 * 1024
STDERR_CAP = 64 * 1024
_REAP_GRACE_S = 1.0
_READ_SIZE = 64 * 1024
_POLL_S = 0.05  # how often a command's end is looked for where no pidfd tells it
# Where every command and child interpreter runs: never the operator's working directory
# (a bundle someone sent, a user's folder), whose files a program may read as its own.
WORKING_DIR = "/"


class CommandResult(Struct, frozen=True):
    """How one command ended: output, exit status and time, or why not (timeout, cap, error)."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    truncated: bool = False
    error: str | None = None
    budget_s: float | None = None  # the time it was given (its timeout, or less: the deadline)
    clamped: bool = False  # the budget was what was left of the caller's deadline
    overflow: str | None = None  # "stdout"/"stderr": it printed past the cap and was killed

    @property
    def ok(self) -> bool:
        return (
            self.error is None
            and not self.timed_out
            and self.overflow is None
            and self.returncode == 0
        )

    @property
    def display(self) -> str:
        return " ".join(self.argv)

    def failure_reason(self) -> str | None:
        """Why this run cannot be trusted, in words; None when it succeeded."""
        if self.error is not None:
            return f"`{self.display}` could not run: {self.error}"
        if self.overflow is not None:
            return (
                f"`{self.display}` printed more than the cap on {self.overflow}; cut there, killed"
            )
        if self.timed_out:
            budget = self.budget_s if self.budget_s is not None else self.duration_s
            left = " (what was left of its deadline)" if self.clamped else ""
            return f"`{self.display}` did not answer within {seconds(budget)}{left}; killed"
        if self.returncode != 0:
            said = last_words(self.stderr or self.stdout)
            return f"`{self.display}` exited {self.returncode}: {said}"
        return None


def last_words(output: str, limit: int = 300, most: int = 3) -> str:
    """The last lines of a failed command's output (at most `most`, within `limit` characters,
    joined by " / "): a tool's message may span lines (nvidia-smi's "Failed to initialize NVML:
    Driver/library version mismatch" is followed by the library's version, its missing
    libnvidia-ml.so message by a hint), and the line that names the failure must be kept."""
    lines = [line.strip() for line in output.strip().splitlines() if line.strip()][-most:]
    kept: list[str] = []
    for line in reversed(lines):
        if kept and len(line) + sum(len(k) + 3 for k in kept) > limit:
            break
        kept.insert(0, line)
    return " / ".join(kept)[:limit]


def seconds(value: float) -> str:
    """`10 s`, `4.5 s`: a duration as a reason says it."""
    return f"{round(value, 1):g} s"


@dataclasses.dataclass
class CommandRunner:
    """Runs commands by absolute path, resolved once per name."""

    path: str | None = None
    output_cap: int = DEFAULT_OUTPUT_CAP
    extra_env: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # what the timeout is counted on (a test's stand-in for time.monotonic; `deadline`s given
    # to `run` are on time.monotonic, so it gives none)
    clock: Callable[[], float] = time.monotonic
    _resolved: dict[str, str | None] = dataclasses.field(
        default_factory=dict, init=False, repr=False
    )

    def which(self, name: str) -> str | None:
        """Absolute path of a command, looked up once; None when absent."""
        if os.sep in name:  # relative to this process's folder, not the command's (`/`)
            return os.path.abspath(name) if os.access(name, os.X_OK) else None
        if name not in self._resolved:
            self._resolved[name] = shutil.which(name, path=self.path)
        return self._resolved[name]

    def run(
        self, argv: Sequence[str], timeout: float, deadline: float | None = None
    ) -> CommandResult:
        """Run `argv` for at most `timeout` seconds, and never past `deadline` (monotonic) nor
        past the deadline of the current scope (the check that asked)."""
        if not argv:
            raise ValueError("empty argv")
        started = self.clock()
        args = tuple(argv)
        limit = work_deadline(deadline)
        budget = max(timeout, 0.0)
        clamped = limit is not None and limit - started < budget
        if limit is not None:
            budget = min(budget, limit - started)
        resolved = self.which(argv[0])
        if resolved is None:
            return CommandResult(args, None, "", "", 0.0, error=f"{argv[0]}: command not found")
        if budget <= 0:
            return CommandResult(
                args, None, "", "", 0.0, error="not started: its caller's deadline had passed"
            )
        with waiting_on(f"`{' '.join(args)}`"):
            return self._run(resolved, args, started, budget, clamped)

    def _run(
        self, resolved: str, args: tuple[str, ...], started: float, budget: float, clamped: bool
    ) -> CommandResult:
        env = {**child_environment(os.environ), **self.extra_env, "LC_ALL": "C", "LANG": "C"}
        try:
            proc = subprocess.Popen(
                [resolved, *args[1:]],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=WORKING_DIR,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            return CommandResult(args, None, "", "", 0.0, error=str(exc))
        deadline = started + budget
        try:
            caps = {"stdout": self.output_cap, "stderr": STDERR_CAP}
            outcome = _Capture(proc, caps, self.clock).run(deadline)
            if outcome.ended is None:
                _kill_tree(proc, deadline, self.clock)
        finally:
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
        finished = outcome.ended is not None and outcome.overflow is None
        return CommandResult(
            argv=args,
            returncode=proc.returncode if finished else None,
            stdout=outcome.text("stdout"),
            stderr=outcome.text("stderr"),
            duration_s=self.clock() - started,
            timed_out=outcome.ended is None and outcome.overflow is None,
            truncated=outcome.overflow is not None,
            budget_s=budget,
            clamped=clamped,
            overflow=outcome.overflow,
        )


class _Capture:
    """Reads a command's stdout and stderr as they come, each up to its cap, until it ends,
    prints past a cap (`overflow`), or the deadline passes (`ended` stays None)."""

    def __init__(
        self, proc: subprocess.Popen[bytes], caps: dict[str, int], clock: Callable[[], float]
    ) -> None:
        self.proc, self.clock = proc, clock
        self.caps = caps
        self.data: dict[str, bytearray] = {name: bytearray() for name in caps}
        self.overflow: str | None = None
        self.ended: int | None = None
        self._pipes = {"stdout": proc.stdout, "stderr": proc.stderr}

    def text(self, name: str) -> str:
        return self.data[name].decode("utf-8", errors="replace")

    def run(self, deadline: float) -> _Capture:
        pidfd = _pidfd(self.proc.pid)
        with selectors.DefaultSelector() as selector:
            for name, pipe in self._pipes.items():
                if pipe is not None:
                    os.set_blocking(pipe.fileno(), False)
                    selector.register(pipe.fileno(), selectors.EVENT_READ, name)
            if pidfd is not None:
                selector.register(pidfd, selectors.EVENT_READ, None)
            try:
                self._loop(selector, deadline, pidfd)
            finally:
                if pidfd is not None:
                    os.close(pidfd)
        return self

    def _loop(self, selector: selectors.BaseSelector, deadline: float, pidfd: int | None) -> None:
        open_pipes = sum(1 for pipe in self._pipes.values() if pipe is not None)
        while self.overflow is None:
            left = deadline - self.clock()
            if left <= 0:
                return
            if open_pipes == 0:  # both closed: only its exit is left to wait for
                self._wait(left)
                return
            wait = left if pidfd is not None else min(left, _POLL_S)
            for key, _ in selector.select(wait):
                if key.data is None:  # the pidfd: the command has ended
                    self._drain(selector)
                    self._wait(max(deadline - self.clock(), 0.0))
                    return
                if self._read(key.data, key.fd) == "end":
                    selector.unregister(key.fd)
                    open_pipes -= 1
            if pidfd is None and self.proc.poll() is not None:
                self._drain(selector)
                self.ended = self.proc.returncode
                return

    def _read(self, name: str, fd: int) -> str:
        """One read from the pipe: "more", "empty" (nothing there now) or "end". Past the
        cap: `overflow` is set."""
        try:
            chunk = os.read(fd, _READ_SIZE)
        except BlockingIOError:
            return "empty"
        if not chunk:
            return "end"
        buffer = self.data[name]
        room = self.caps[name] - len(buffer)
        buffer += chunk[: max(room, 0)]
        if len(chunk) > room:
            self.overflow = name
        return "more"

    def _drain(self, selector: selectors.BaseSelector) -> None:
        """What the ended command left in its pipes; only what is there now (a grandchild
        may hold a pipe open)."""
        for key in list(selector.get_map().values()):
            if key.data is not None:
                while self.overflow is None and self._read(key.data, key.fd) == "more":
                    pass

    def _wait(self, left: float) -> None:
        try:
            self.ended = self.proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            pass


def _pidfd(pid: int) -> int | None:
    """A descriptor readable once `pid` has ended (Linux 5.3+), else None (then polled)."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        fd: int = opener(pid)
    except OSError:
        return None
    return fd


# What a command may inherit: enough to find programs, libraries, Python and the GPUs; never
# the rest (OTLP headers, tokens and other secrets live in the environment).
_INHERITED = (
    "PATH",
    "HOME",
    "USER",
    "TMPDIR",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
    "SYSTEMD_PAGER",
)
_INHERITED_PREFIXES = ("CUDA_", "NVIDIA_", "__NV_", "SITSCHECK_")


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    return {
        key: value
        for key, value in environ.items()
        if key in _INHERITED or key.startswith(_INHERITED_PREFIXES)
    }


def _kill_tree(proc: subprocess.Popen[bytes], deadline: float, clock: Callable[[], float]) -> None:
    """SIGKILL the command, its process group and every process below it (found before the
    kill, while the tree still leads to them); reap it briefly, never block on a D-state one."""
    below = _descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for pid in below:
        _kill(pid)
    try:
        proc.wait(timeout=max(min(_REAP_GRACE_S, deadline - clock()), 0.1))
    except subprocess.TimeoutExpired:
        pass


def _descendants(pid: int) -> list[int]:
    import psutil

    try:
        return [child.pid for child in psutil.Process(pid).children(recursive=True)]
    except psutil.Error:
        return []


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_descendants(reap_s: float = 0.0) -> list[int]:
    """SIGKILL every descendant of this process, and the process group each command leads;
    with `reap_s`, wait up to that long for them to end and reap those that are children."""
    import psutil

    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        return []
    own_group = os.getpgrp()
    killed: list[int] = []
    for child in children:
        try:
            group = os.getpgid(child.pid)
            if group == child.pid and group != own_group:
                os.killpg(group, signal.SIGKILL)
        except OSError:
            pass
        try:
            child.kill()
            killed.append(child.pid)
        except psutil.Error:
            pass
    if reap_s > 0 and children:
        psutil.wait_procs(children, timeout=reap_s)  # reaps those that are its children
    return killed
