"""The one way sitscheck runs a declared workload (`WorkloadSpec`): its children started,
listened to, and ended within its deadline. Every acceptance phase, `run --load` (the GPUs
kept busy while they are sampled: `Background`) and `run --bandwidth` run their workloads here.

One isolated interpreter per GPU (`python -I -m MODULE PHASE --seconds S --engine E`,
`workload_args`; its own session, CUDA_VISIBLE_DEVICES set to the GPU's UUID), read line by
line with a selector until each has ended or the deadline passes. A child has ended when its
process has (whatever still holds its output: a grandchild's copy of the pipe is no reason to
wait), and what it said up to then is read before it is judged: ok when it printed its result
(its last line), failed when it printed an error or exited without a result. A child still
running at the deadline has stopped responding: it is killed with its process group and reaped,
and named "hung" with what it said it was doing; but one that never said it was ready, in a
phase that left it less than its start allowance (`startup_s`), is "failed" (it had no fair
chance to start: an unknown, never a critical verdict). A stop (SIGINT/SIGTERM to sitscheck)
ends every child within STOP_GRACE_S: SIGTERM, then SIGKILL; exiting frees the GPU memory it
held. A process that SIGKILL does not end (stuck in the kernel driver) is left after REAP_S,
named, never waited on for ever: the budget holds whatever happens. A workload its caller ends
before its deadline (`Background.end`: the `--load` once it is no longer needed) is ended the
same way; a child that was at its work then is ok, one that never got ready failed.

What a child prints is untrusted text: a line past MAX_LINE is dropped to its end, a malformed
one is skipped, and the text kept (what it does, its error, its figure) is made printable and
cut to MAX_TEXT characters.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

from msgspec import Struct, field

from ..sources import child_python
from ..threads import start_daemon

STOP_GRACE_S = 0.5
REAP_S = 2.0  # after SIGKILL: a process still there is stuck in the kernel, and is left
POLL_S = 0.2
MAX_LINE = 1 << 20
MAX_TEXT = 500
DRAIN_MAX = 4 * MAX_LINE  # what is read of an ended child's pipe at most (a writer may remain)


class Target(Struct, frozen=True):
    """A GPU a phase runs on."""

    index: int
    uuid: str
    pci_bus_id: str | None
    name: str | None


class Child(Struct):
    """One GPU's child: what it said, and how it ended."""

    target: Target
    process: subprocess.Popen[bytes] | None = None
    status: str = "running"  # ok, failed, hung, interrupted, not_run
    reason: str | None = None
    doing: str | None = None
    figure: str | None = None
    engine: str | None = None
    result: dict[str, object] | None = None
    times: list[tuple[float, list[float]]] = field(default_factory=list)
    started: float = 0.0
    ready: float = 0.0  # when it said its work starts (monotonic)
    ended: float = 0.0
    buffer: bytes = b""
    discarding: bool = False  # inside a line past MAX_LINE: dropped up to its newline

    def as_record(self) -> dict[str, object]:
        return {
            "index": self.target.index,
            "uuid": self.target.uuid,
            "pci_bus_id": self.target.pci_bus_id,
            "name": self.target.name,
            "status": self.status,
            "reason": self.reason,
            "doing": self.doing,
            "seconds": round(self.ended - self.started, 3) if self.started else None,
            "result": self.result,
        }


Progress = Callable[[Sequence[Child]], None]
# `visible` of a workload that sees the GPUs of sitscheck's own environment, as they are
# (`run --bandwidth`: CUDA_VISIBLE_DEVICES, where it is set, is the operator's)
INHERITED = "inherited"


def workload_args(phase: str, seconds: float, engine: str) -> list[str]:
    """A workload module's arguments (`WorkloadSpec`): its phase, its time, its engine."""
    return [phase, "--seconds", f"{seconds:.1f}", "--engine", engine]


def run_children(
    module: str,
    targets: Sequence[Target],
    args_for: Callable[[Target], list[str]],
    deadline: float,
    stop: Callable[[], bool],
    on_progress: Progress | None = None,
    env: dict[str, str] | None = None,
    visible: str | None = None,
    *,
    startup_s: float = 0.0,
    clock: Callable[[], float] = time.monotonic,
    grace_s: float = STOP_GRACE_S,
) -> list[Child]:
    """Start one child per target, read them until each ends or `deadline` (on `clock`);
    never outlives it. `stop()` true (a signal came) ends them all at once as interrupted.
    `visible`: the CUDA_VISIBLE_DEVICES of every child (the ranks of a multi-GPU workload each
    see all the phase's GPUs; INHERITED: the environment's own); by default each child sees its
    own GPU alone. `startup_s`: what a child may need before it says it is ready (see the
    module's note). `grace_s`: between SIGTERM and SIGKILL when they are ended."""
    children = [Child(target) for target in targets]
    selector = selectors.DefaultSelector()
    try:
        for child in children:
            _start(child, module, args_for(child.target), env, selector, clock, visible)
        _listen(children, selector, deadline, stop, on_progress, clock)
    finally:
        _end_all(children, selector, stop, deadline, startup_s, clock, grace_s)
        selector.close()
    return children


class Background:
    """A workload's children kept at their work while the caller does its own (`run --load`:
    the GPUs busy while they are sampled): started and heard until each said it is ready
    (`start`), then heard on a thread of their own until `end()` or the deadline, and ended
    there as `run_children` ends them (`clock`, `grace_s`: as there). `outcome()` says how each
    is doing meanwhile."""

    def __init__(
        self,
        module: str,
        targets: Sequence[Target],
        args_for: Callable[[Target], list[str]],
        deadline: float,
        *,
        startup_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        grace_s: float = STOP_GRACE_S,
    ) -> None:
        self.module = module
        self.children = [Child(target) for target in targets]
        self.deadline = deadline
        self.startup_s = startup_s
        self.clock = clock
        self.grace_s = grace_s
        self._args_for = args_for
        self._selector = selectors.DefaultSelector()
        self._ending = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._ended = False

    def start(self, ready_by: float) -> None:
        """Start every child and hear them (on this thread) until each said it is ready or
        has ended, or `ready_by`; then go on hearing them on a thread of their own."""
        clock = self.clock
        try:
            for child in self.children:
                _start(child, self.module, self._args_for(child.target), None, self._selector,
                       clock)  # fmt: skip
            _listen(self.children, self._selector, min(ready_by, self.deadline), _never, None,
                    clock, until=self._all_ready)  # fmt: skip
            self._thread = start_daemon(self._hear, name="workload")
        except BaseException:  # CannotStart included: children nobody hears would fill their
            self.end()  # pipes and stop, and must not outlive this; they end now
            raise

    def _all_ready(self) -> bool:
        return all(c.engine is not None or c.status != "running" for c in self.children)

    def _hear(self) -> None:
        try:
            _listen(self.children, self._selector, self.deadline, _never, None,
                    self.clock, self._lock, self._ending.is_set)  # fmt: skip
        finally:
            self._close()

    def _close(self) -> None:
        with self._lock:
            if self._ended:
                return
            self._ended = True
            _end_all(self.children, self._selector, _never, self.deadline, self.startup_s,
                     self.clock, self.grace_s, ended=self._ending.is_set())  # fmt: skip
            self._selector.close()

    def outcome(self) -> list[tuple[Target, str, str | None, str | None]]:
        """Each child's target, status, reason and engine now."""
        with self._lock:
            return [(c.target, c.status, c.reason, c.engine) for c in self.children]

    def end(self) -> list[Child]:
        """End every child now (those still at their work are ok) and reap them; bounded
        (`_end_all`), whatever state they are in."""
        self._ending.set()
        if self._thread is not None:
            self._thread.join()
        self._close()
        return self.children


def _never() -> bool:
    return False


def _start(
    child: Child,
    module: str,
    args: list[str],
    env: dict[str, str] | None,
    selector: selectors.BaseSelector,
    clock: Callable[[], float],
    visible: str | None = None,
) -> None:
    extra = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    if visible != INHERITED:
        extra["CUDA_VISIBLE_DEVICES"] = visible or child.target.uuid
    child.started = clock()
    try:
        child.process = child_python.start(
            module,
            args,
            env={**(env or {}), **extra},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except (OSError, RuntimeError) as exc:  # RuntimeError: no thread or memory to start it
        child.status, child.reason = "failed", _printable(f"could not start the workload: {exc}")
        child.ended = clock()
        return
    assert child.process.stdout is not None
    os.set_blocking(child.process.stdout.fileno(), False)
    selector.register(child.process.stdout, selectors.EVENT_READ, child)


def _listen(
    children: list[Child],
    selector: selectors.BaseSelector,
    deadline: float,
    stop: Callable[[], bool],
    on_progress: Progress | None,
    clock: Callable[[], float],
    lock: AbstractContextManager[object] | None = None,
    until: Callable[[], bool] = lambda: False,
) -> None:
    """Until every child has ended, `deadline`, a stop (a signal) or `until()` (the caller's
    own end: not a signal); `lock` is held while what they said is taken in."""
    last_progress: float | None = None
    while any(c.status == "running" for c in children) and not stop() and not until():
        now = clock()
        if now >= deadline:
            return
        wait = min(POLL_S, deadline - now)
        if selector.get_map():
            events = selector.select(timeout=wait)
        else:  # every running child closed its output: only its end is left to see
            time.sleep(wait)
            events = []
        with lock or nullcontext():
            _take_in(children, selector, events, stop, clock)
        if on_progress is not None and (last_progress is None or clock() - last_progress >= 1.0):
            on_progress(children)
            last_progress = clock()


def _take_in(
    children: list[Child],
    selector: selectors.BaseSelector,
    events: list[tuple[selectors.SelectorKey, int]],
    stop: Callable[[], bool],
    clock: Callable[[], float],
) -> None:
    for key, _ in events:
        _read_into(key.data, selector)
    for child in children:
        if child.status == "running" and child.process is not None:
            code = child.process.poll()
            if code is not None:  # it has ended: what it said, then how it ended
                _drain(child, selector)
                _finish(child, code, stop(), clock)


def _read_into(child: Child, selector: selectors.BaseSelector) -> int:
    """Read what the child has written now; the bytes read (0: nothing now, or its end)."""
    assert child.process is not None and child.process.stdout is not None
    try:
        data = os.read(child.process.stdout.fileno(), 65536)
    except BlockingIOError:
        return 0
    except OSError:
        data = b""
    if not data:  # end of output: the child exited or closed stdout; its end comes by poll()
        if _registered(child, selector):
            selector.unregister(child.process.stdout)
        return 0
    _feed(child, data)
    return len(data)


def _registered(child: Child, selector: selectors.BaseSelector) -> bool:
    assert child.process is not None
    try:
        selector.get_key(child.process.stdout)  # type: ignore[arg-type]
    except KeyError:
        return False
    return True


def _drain(child: Child, selector: selectors.BaseSelector) -> None:
    """Everything the child wrote before now (bounded: a grandchild may still be writing)."""
    read = 0
    while read < DRAIN_MAX and _registered(child, selector):
        got = _read_into(child, selector)
        if not got:
            return
        read += got


def _feed(child: Child, data: bytes) -> None:
    lines = (child.buffer + data).split(b"\n")
    child.buffer = lines.pop()
    for line in lines:
        if child.discarding:  # the end of a line past MAX_LINE: dropped with it
            child.discarding = False
            continue
        _take(child, line)
    if len(child.buffer) > MAX_LINE:
        child.buffer, child.discarding = b"", True


def _take(child: Child, line: bytes) -> None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser
        return
    if not isinstance(message, dict):
        return
    event = message.pop("event", None)
    if event == "ready":
        child.engine = _printable(message.get("engine"))
        child.ready = time.monotonic()  # the soak's samples are on this clock
    elif event == "doing":
        child.doing = _printable(message.get("what"))
    elif event == "figure":
        child.figure = _printable(f"{message.get('value')} {message.get('unit')}")
    elif event == "times":
        batch = _batch(message.get("t"), message.get("ms"))
        if batch is not None:
            child.times.append(batch)
    elif event == "result":
        child.result = message
    elif event == "error" and child.status == "running":
        child.status, child.reason = "failed", _printable(message.get("reason"))


def _batch(t: object, ms: object) -> tuple[float, list[float]] | None:
    numbers = (int, float)
    if t is not None and (not isinstance(t, numbers) or isinstance(t, bool)):
        return None
    if not isinstance(ms, list) or not all(
        isinstance(x, numbers) and not isinstance(x, bool) for x in ms
    ):
        return None
    return float(t or 0.0), [float(x) for x in ms]


def _printable(value: object) -> str:
    """A child's text as it may be printed: no control or format characters, at most
    MAX_TEXT characters."""
    text = "".join(ch if ch.isprintable() else " " for ch in str(value)[: MAX_TEXT * 4])
    return " ".join(text.split())[:MAX_TEXT]


def _finish(child: Child, code: int | None, stopped: bool, clock: Callable[[], float]) -> None:
    """The child's process has ended (`code`, None when unknown): how it ended. After a stop
    an end without a result is the stop's doing (sitscheck's signal handler kills every
    descendant once it has set the stop), never a failure of the workload."""
    child.ended = clock()
    if child.status != "running":
        return
    if child.result is not None:
        child.status = "ok"
    elif stopped:
        _interrupted(child)
    else:
        child.status = "failed"
        child.reason = f"the workload exited with {_how(code)} before its result" + (
            f", while {child.doing}" if child.doing else ""
        )


def _judge_unfinished(
    child: Child,
    stopped: bool,
    deadline: float,
    startup_s: float,
    clock: Callable[[], float],
    ended: bool = False,
) -> None:
    """A child still running when the phase ends (deadline, stop, or its caller's end)."""
    child.ended = clock()
    if child.result is not None:  # its last line came: its work is done, whatever it does now
        child.status = "ok"
    elif stopped:
        _interrupted(child)
    elif ended and child.engine is not None:  # at its work when its caller ended it
        child.status = "ok"
    elif ended:
        child.status = "failed"
        child.reason = f"not ready when its work was ended, while {child.doing or 'starting'}"
    elif child.engine is None and child.doing is None and deadline - child.started < startup_s:
        child.status = "failed"
        child.reason = (
            f"did not get ready in the {max(deadline - child.started, 0.0):.0f} s the phase "
            f"left it (starting may take {startup_s:.0f} s); killed"
        )
    else:
        child.status = "hung"
        child.reason = f"stopped responding while {child.doing or 'starting'}; killed"


def _interrupted(child: Child) -> None:
    child.status = "interrupted"
    child.reason = f"stopped by a signal while {child.doing or 'starting'}"


def _end_all(
    children: list[Child],
    selector: selectors.BaseSelector,
    stop: Callable[[], bool],
    deadline: float,
    startup_s: float,
    clock: Callable[[], float],
    grace_s: float,
    ended: bool = False,
) -> None:
    """Whatever state the children are in, they are gone when this returns: what they said
    read, SIGTERM to every group, `grace_s` for all of them together, then SIGKILL, then
    reaped (a process that SIGKILL does not end is left after REAP_S, and named). `ended`:
    their caller ends them before their deadline (`Background.end`)."""
    started = [c for c in children if c.process is not None]
    stopped = stop()
    for child in started:
        assert child.process is not None
        _drain(child, selector)
        if child.status == "running":
            code = child.process.poll()
            if code is not None:
                _finish(child, code, stopped, clock)
            else:
                _judge_unfinished(child, stopped, deadline, startup_s, clock, ended)
    _signal_and_wait(started, signal.SIGTERM, grace_s)
    # the group's other members too, if the child started any
    for child in _signal_and_wait(started, signal.SIGKILL, REAP_S):
        assert child.process is not None
        child.reason = (child.reason + "; " if child.reason else "") + (
            f"its process {child.process.pid} did not end after SIGKILL (stuck in the "
            "kernel driver?)"
        )
    for child in started:
        assert child.process is not None
        if child.process.stdout is not None:
            if _registered(child, selector):
                selector.unregister(child.process.stdout)
            child.process.stdout.close()


def _signal_and_wait(children: list[Child], sig: int, seconds: float) -> list[Child]:
    """`sig` to every child's group, then up to `seconds` for all of them together; the
    children still running after it."""
    for child in children:
        _signal_group(child, sig)
    ends = time.monotonic() + seconds
    left = []
    for child in children:
        assert child.process is not None
        try:
            child.process.wait(timeout=max(ends - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            left.append(child)
    return left


def _signal_group(child: Child, sig: int) -> None:
    assert child.process is not None
    try:
        os.killpg(child.process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _how(code: int | None) -> str:
    if code is None:
        return "no exit status"
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"exit code {code}"
