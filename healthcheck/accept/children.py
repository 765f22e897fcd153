"""The workload children of one phase: started, listened to, and ended within the phase.

One isolated interpreter per GPU (`python -I -m sitscheck.probes.accept PHASE …`, its own
session, CUDA_VISIBLE_DEVICES set to the GPU's UUID), read line by line with a selector until
each has printed its last line or the phase's deadline passes. A child still running then has
stopped responding: it is killed with its process group and reaped, and named "hung" with
what it said it was doing. A stop (SIGINT/SIGTERM to sitscheck) ends every child within
STOP_GRACE_S: SIGTERM, then SIGKILL; exiting frees the GPU memory it held.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Sequence

from msgspec import Struct, field

from ..sources import child_python

STOP_GRACE_S = 0.5
MAX_LINE = 1 << 20


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


def run_children(
    module: str,
    targets: Sequence[Target],
    args_for: Callable[[Target], list[str]],
    deadline: float,
    stop: Callable[[], bool],
    on_progress: Progress | None = None,
    env: dict[str, str] | None = None,
    visible: str | None = None,
) -> list[Child]:
    """Start one child per target, read them until each ends or `deadline`; never outlives it.
    `stop()` true (a signal came) ends them all at once as interrupted. `visible`: the
    CUDA_VISIBLE_DEVICES of every child (the ranks of a multi-GPU workload each see all the
    phase's GPUs); by default each child sees its own GPU alone."""
    children = [Child(target) for target in targets]
    selector = selectors.DefaultSelector()
    try:
        for child in children:
            _start(child, module, args_for(child.target), env, selector, visible)
        _listen(children, selector, deadline, stop, on_progress)
    finally:
        _end_all(children, stop)
        selector.close()
    return children


def _start(
    child: Child,
    module: str,
    args: list[str],
    env: dict[str, str] | None,
    selector: selectors.BaseSelector,
    visible: str | None = None,
) -> None:
    extra = {
        "CUDA_VISIBLE_DEVICES": visible or child.target.uuid,
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    }
    child.started = time.monotonic()
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
        child.status, child.reason = "failed", f"could not start the workload: {exc}"
        child.ended = time.monotonic()
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
) -> None:
    last_progress = 0.0
    while selector.get_map() and not stop():
        now = time.monotonic()
        if now >= deadline:
            return
        for key, _ in selector.select(timeout=min(0.2, deadline - now)):
            child: Child = key.data
            chunk = _read(key.fileobj)  # type: ignore[arg-type]
            if chunk is None:  # end of output: the child exited (or closed stdout)
                selector.unregister(key.fileobj)
                _finish(child)
                continue
            child.buffer += chunk
            *lines, child.buffer = child.buffer.split(b"\n")
            if len(child.buffer) > MAX_LINE:
                child.buffer = b""
            for line in lines:
                _take(child, line)
        if on_progress is not None and time.monotonic() - last_progress >= 1.0:
            on_progress(children)
            last_progress = time.monotonic()


def _read(stream: object) -> bytes | None:
    try:
        data = os.read(stream.fileno(), 65536)  # type: ignore[attr-defined]
    except BlockingIOError:
        return b""
    except OSError:
        return None
    return data or None


def _take(child: Child, line: bytes) -> None:
    try:
        message = json.loads(line)
    except ValueError:
        return
    if not isinstance(message, dict):
        return
    event = message.pop("event", None)
    if event == "ready":
        child.engine = str(message.get("engine"))
        child.ready = time.monotonic()
    elif event == "doing":
        child.doing = str(message.get("what"))
    elif event == "figure":
        child.figure = f"{message.get('value')} {message.get('unit')}"
    elif event == "times":
        ms = message.get("ms")
        if isinstance(ms, list):
            child.times.append((float(message.get("t") or 0.0), [float(x) for x in ms]))
    elif event == "result":
        child.result = message
    elif event == "error":
        child.status, child.reason = "failed", str(message.get("reason"))


def _finish(child: Child) -> None:
    """The child closed its output: it has ended (or is about to); how it ended."""
    child.ended = time.monotonic()
    process = child.process
    code = process.wait(timeout=STOP_GRACE_S) if process is not None else None
    if child.status != "running":
        return
    if child.result is not None:
        child.status = "ok"
    else:
        child.status = "failed"
        child.reason = f"the workload exited with {_how(code)} before its result" + (
            f", while {child.doing}" if child.doing else ""
        )


def _end_all(children: list[Child], stop: Callable[[], bool]) -> None:
    """Whatever state the children are in, they are gone when this returns: SIGTERM to every
    group still running, STOP_GRACE_S for all of them together, then SIGKILL, then reaped."""
    running = [c for c in children if c.process is not None]
    for child in running:
        if child.status == "running":
            child.ended = time.monotonic()
            if stop():
                child.status = "interrupted"
                child.reason = f"stopped by a signal while {child.doing or 'starting'}"
            else:
                child.status = "hung"
                child.reason = f"stopped responding while {child.doing or 'starting'}; killed"
    for child in running:
        _signal_group(child, signal.SIGTERM)
    grace_ends = time.monotonic() + STOP_GRACE_S
    for child in running:
        assert child.process is not None
        try:
            child.process.wait(timeout=max(grace_ends - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            pass
    for child in running:  # the group's other members too, if the child started any
        _signal_group(child, signal.SIGKILL)
        assert child.process is not None
        child.process.wait()
        if child.process.stdout is not None:
            child.process.stdout.close()


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
        return f"signal {signal.Signals(-code).name}"
    return f"exit code {code}"
