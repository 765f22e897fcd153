"""The acceptance parent's workload children (`sitscheck.workloads.children`), without a GPU.

The children are `fake_workloads.behave`, a stand-in that speaks the workload protocol and
misbehaves as asked. It writes marker files (its pids; that it has said what it does) in a
folder the test names, and the tests wait on those files or pass a clock that jumps past the
deadline once they exist: no test depends on how fast this machine starts a process. The
children that outlive SIGTERM here ignore it, so the tests give them a short grace before
SIGKILL (`GRACE_S`): what they show is the same with any grace. The timing bounds themselves,
with the default grace, are slow-marked, with generous margins.
"""

from __future__ import annotations

import os
import selectors
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import fake_workloads
import psutil
import pytest
from fake_workloads.behave import BEHAVIOUR_VARIABLE
from fakes.procs import FAR, JumpClock
from sitscheck.threads import CannotStart
from sitscheck.workloads import children
from sitscheck.workloads.children import STOP_GRACE_S, Background, Child, Target, run_children

MODULE = fake_workloads.MODULE
GRACE_S = 0.05  # SIGTERM to SIGKILL: a child that ignores SIGTERM is killed as with the default


@pytest.fixture(autouse=True)
def marks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return fake_workloads.prepare(tmp_path, monkeypatch)


def targets(count: int) -> list[Target]:
    return [
        Target(i, f"GPU-fake-{i}", f"0000:{i + 0x10:02x}:00.0", "Fake GPU") for i in range(count)
    ]


def behaviours(*names: str) -> Callable[[Target], list[str]]:
    return lambda t: ["memtest", "--seconds", "5", "--inject", names[t.index]]


def all_marked(folder: Path, suffix: str, count: int) -> Callable[[], bool]:
    return lambda: len(list(folder.glob(f"*.{suffix}"))) >= count


def run(
    count: int,
    args: Callable[[Target], list[str]],
    *,
    stop: Callable[[], bool] = lambda: False,
    clock: Callable[[], float] = time.monotonic,
    startup_s: float = 0.0,
    progress: Callable[[Sequence[Child]], None] | None = None,
) -> list[Child]:
    return run_children(
        MODULE, targets(count), args, time.monotonic() + FAR, stop, progress,
        clock=clock, startup_s=startup_s, grace_s=GRACE_S,
    )  # fmt: skip


def recorded_pids(folder: Path) -> list[int]:
    return [int(w) for f in sorted(folder.glob("*.pids")) for w in f.read_text().split()]


def assert_nothing_left(done: list[Child], folder: Path | None = None) -> None:
    """Every child reaped (no zombie of ours), every grandchild gone."""
    for child in done:
        assert child.process is None or child.process.returncode is not None
    mine = {p.pid for p in psutil.Process().children(recursive=True)}
    started = {c.process.pid for c in done if c.process is not None}
    assert not started & mine, "a child of the phase is still there (running or a zombie)"
    if folder is not None:
        from fakes.procs import still_running

        assert still_running(recorded_pids(folder), within_s=5.0) == []


def test_a_child_that_works_is_ok_with_its_result_and_what_it_said(marks: Path) -> None:
    (child,) = run(1, behaviours("ok"))
    assert child.status == "ok" and child.reason is None
    assert child.result is not None and child.result["uuid"] == "GPU-fake-0"
    assert child.result["seconds_asked"] == 5.0
    assert child.engine == "fake" and child.doing == "memtest: fake work on GPU-fake-0"
    assert child.figure == "42.5 TFLOP/s"
    assert child.times == [(1.0, [1.5, 1.6]), (2.0, [1.7])]
    record = child.as_record()
    assert record["status"] == "ok" and record["uuid"] == "GPU-fake-0"
    assert record["pci_bus_id"] == "0000:10:00.0"
    assert_nothing_left([child], marks)


def test_the_child_is_isolated_and_sees_only_its_gpu(marks: Path) -> None:
    """Looked at from the progress call (made at once, then each second) while the child
    runs: the stop comes only once it has been looked at (the child ignores SIGTERM and
    never ends by itself)."""
    seen: dict[str, Any] = {}

    def look(running: Sequence[Child]) -> None:
        (child,) = running
        assert child.process is not None
        process = psutil.Process(child.process.pid)
        seen.update(cmd=process.cmdline(), cwd=process.cwd(), env=process.environ(),
                    session=os.getsid(process.pid))  # fmt: skip

    (child,) = run(1, behaviours("hang"), stop=lambda: bool(seen), progress=look)
    assert child.status == "interrupted"
    assert child.process is not None
    assert seen["cmd"][:2] == [sys.executable, "-I"] and MODULE in seen["cmd"]
    assert seen["cwd"] == "/"
    assert seen["env"]["CUDA_VISIBLE_DEVICES"] == "GPU-fake-0"
    assert seen["session"] == child.process.pid != os.getsid(0)  # its own session and group
    assert_nothing_left([child], marks)


def test_an_error_line_is_a_failure_with_the_childs_reason(marks: Path) -> None:
    (child,) = run(1, behaviours("error"))
    assert child.status == "failed"
    assert child.reason == "cuInit failed (fake): CUDA_ERROR_NO_DEVICE"
    assert_nothing_left([child], marks)


@pytest.mark.parametrize(
    ("behaviour", "how"), [("exit1", "exit code 1"), ("segv", "signal SIGSEGV")]
)
def test_a_child_that_dies_before_its_result_is_a_failure_naming_how_and_what_it_did(
    behaviour: str, how: str, marks: Path
) -> None:
    (child,) = run(1, behaviours(behaviour))
    assert child.status == "failed" and child.result is None
    assert child.reason == (
        f"the workload exited with {how} before its result, while memtest: fake work on GPU-fake-0"
    )
    assert_nothing_left([child], marks)


def test_a_child_that_ignores_sigterm_is_hung_at_the_deadline_killed_with_its_group(
    marks: Path,
) -> None:
    clock = JumpClock(all_marked(marks, "doing", 1))
    (child,) = run(1, behaviours("hang"), clock=clock)
    assert clock.jumped
    assert child.status == "hung"
    assert child.reason == "stopped responding while memtest: fake work on GPU-fake-0; killed"
    assert child.process is not None and child.process.returncode == -signal.SIGKILL
    assert len(recorded_pids(marks)) == 2  # the child and the grandchild it started
    assert_nothing_left([child], marks)


class Deaf(selectors.DefaultSelector):
    """A selector that never says a child's output is ready: what the children said stays in
    their pipes until the runner reads them as it ends them."""

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        time.sleep(min(timeout or 0.0, 0.01))
        return []


def test_what_a_child_said_just_before_the_deadline_is_read_before_it_is_judged(
    marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clock jumps as soon as the marker exists, which is after the child's last line is
    in the pipe, and the runner's selector never woke for it: the runner must read it before
    it names what the child was doing."""
    monkeypatch.setattr(children.selectors, "DefaultSelector", Deaf)
    clock = JumpClock(all_marked(marks, "doing", 2))
    done = run(2, behaviours("hang", "hang"), clock=clock)
    assert [c.doing for c in done] == [f"memtest: fake work on GPU-fake-{i}" for i in (0, 1)]
    assert {c.status for c in done} == {"hung"}
    assert_nothing_left(done, marks)


def test_a_child_not_ready_within_less_than_its_start_allowance_is_not_called_hung(
    marks: Path,
) -> None:
    """A phase that gave a child less than its start allowance (a small budget, a late start)
    cannot say it hung: that is a failure (UNKNOWN), never a critical verdict."""
    clock = JumpClock(all_marked(marks, "pids", 1))
    (child,) = run(1, behaviours("no-ready"), clock=clock, startup_s=3 * FAR)
    assert child.status == "failed"
    assert child.reason is not None and "did not get ready" in child.reason
    assert_nothing_left([child], marks)


def test_a_child_not_ready_with_its_whole_start_allowance_is_hung(marks: Path) -> None:
    clock = JumpClock(all_marked(marks, "pids", 1))
    (child,) = run(1, behaviours("no-ready"), clock=clock, startup_s=0.0)
    assert child.status == "hung"
    assert child.reason == "stopped responding while starting; killed"
    assert_nothing_left([child], marks)


def test_a_child_that_closes_its_output_and_stays_is_hung_not_an_exception(marks: Path) -> None:
    clock = JumpClock(all_marked(marks, "doing", 1))
    (child,) = run(1, behaviours("close-stdout"), clock=clock)
    assert child.status == "hung"
    assert child.reason == "stopped responding while memtest: fake work on GPU-fake-0; killed"
    assert_nothing_left([child], marks)


def test_a_child_that_printed_its_result_is_ok_even_if_it_then_hangs(marks: Path) -> None:
    (child,) = run(1, behaviours("result-then-hang"), clock=JumpClock(all_marked(marks, "pids", 1)))
    assert child.status == "ok" and child.result is not None
    assert_nothing_left([child], marks)


def test_an_error_then_a_hang_stays_the_error(marks: Path) -> None:
    clock = JumpClock(all_marked(marks, "pids", 1))
    (child,) = run(1, behaviours("error-then-hang"), clock=clock)
    assert child.status == "failed" and child.reason == "could not allocate (fake)"
    assert_nothing_left([child], marks)


def test_a_child_that_exits_with_its_result_is_done_though_a_grandchild_holds_its_output(
    marks: Path,
) -> None:
    """The child's end is its process's end, not its pipe's: a grandchild holding the pipe
    neither makes it hung nor keeps the phase waiting (the clock jumps only once the child
    itself is gone, so a runner that waits for the pipe reaches the deadline)."""

    def child_gone() -> bool:
        pids = recorded_pids(marks)
        if not pids:
            return False
        try:
            return psutil.Process(pids[0]).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    (child,) = run(1, behaviours("grandchild-holds-pipe"), clock=JumpClock(child_gone))
    assert child.status == "ok" and child.result is not None
    assert child.process is not None and child.process.returncode == 0
    assert_nothing_left([child], marks)


def test_garbage_lines_are_skipped_and_never_break_the_runner(marks: Path) -> None:
    (child,) = run(1, behaviours("garbage"))
    assert child.status == "ok" and child.result is not None
    assert child.times == [(1.0, [1.5, 1.6]), (2.0, [1.7])]  # the malformed batches left out
    # what the child says is made printable and short before anyone prints it
    assert child.doing is not None and child.doing.startswith("[31mred yyy")  # no ESC, BEL, RLO
    assert child.doing.isprintable() and len(child.doing) <= children.MAX_TEXT
    assert child.figure is not None and child.figure.isprintable()
    assert_nothing_left([child], marks)


def test_a_huge_line_is_dropped_and_memory_stays_bounded(marks: Path) -> None:
    (child,) = run(1, behaviours("huge-line"))
    assert child.status == "ok" and child.result is not None
    assert len(child.buffer) <= children.MAX_LINE
    assert_nothing_left([child], marks)


def test_many_children_at_once_each_with_its_own_gpu_and_ending(marks: Path) -> None:
    kinds = ["ok", "error", "exit1", "ok", "segv", "ok", "garbage", "huge-line"]
    done = run(len(kinds), behaviours(*kinds))
    expected = {"ok": "ok", "garbage": "ok", "huge-line": "ok"}
    assert [c.status for c in done] == [expected.get(k, "failed") for k in kinds]
    for child in done:
        assert child.as_record()["index"] == child.target.index
        if child.result is not None:
            assert child.result["uuid"] == child.target.uuid
    assert_nothing_left(done, marks)


def test_a_stop_mid_phase_interrupts_every_child_even_those_ignoring_sigterm(marks: Path) -> None:
    kinds = ("hang", "no-ready", "close-stdout", "hang")
    started, speaking = all_marked(marks, "pids", len(kinds)), all_marked(marks, "doing", 3)
    done = run(len(kinds), behaviours(*kinds), stop=lambda: started() and speaking())
    assert [c.status for c in done] == ["interrupted"] * 4
    assert done[0].reason == "stopped by a signal while memtest: fake work on GPU-fake-0"
    assert done[1].reason == "stopped by a signal while starting"
    assert_nothing_left(done, marks)


def test_children_the_signal_handler_killed_are_interrupted_not_failed(marks: Path) -> None:
    """`sitscheck`'s own SIGTERM handler kills every descendant at once (interrupt.trigger),
    after it has set the stop: a child found dead then was interrupted, not a failure."""
    ready = all_marked(marks, "doing", 2)
    stopped: list[bool] = []

    def stop() -> bool:
        if not stopped and ready():
            stopped.append(True)  # the handler: the stop first, then the kill
            for pid in recorded_pids(marks)[::2]:  # each child's pid (the grandchild's after)
                os.killpg(pid, signal.SIGKILL)
            for pid in recorded_pids(marks)[::2]:
                while psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    time.sleep(0.01)
        return bool(stopped)

    done = run(2, behaviours("hang", "hang"), stop=stop)
    assert [c.status for c in done] == ["interrupted", "interrupted"]
    assert done[0].reason == "stopped by a signal while memtest: fake work on GPU-fake-0"
    assert_nothing_left(done, marks)


def test_a_stop_before_any_child_spoke_interrupts_them_as_starting(marks: Path) -> None:
    done = run(3, behaviours("ok", "hang", "no-ready"), stop=lambda: True)
    assert {c.status for c in done} <= {"interrupted", "ok", "failed"}
    assert done[2].status == "interrupted"
    assert done[2].reason == "stopped by a signal while starting"
    assert_nothing_left(done)


def test_a_child_that_cannot_start_fails_and_the_others_run(
    marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = children.child_python.start

    def start(module: str, args: Sequence[str] = (), **kwargs: object) -> object:
        if "boom" in args:
            raise OSError(11, "Resource temporarily unavailable")
        return real(module, args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(children.child_python, "start", start)
    done = run(2, behaviours("boom", "ok"))
    assert done[0].status == "failed"
    assert (
        done[0].reason
        == "could not start the workload: [Errno 11] Resource temporarily unavailable"
    )
    assert done[1].status == "ok"
    assert_nothing_left(done, marks)


def test_a_child_that_does_not_die_after_sigkill_is_left_not_waited_on_for_ever(
    marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process stuck in the driver (D state) ignores SIGKILL; the runner must not wait on
    it for ever (the budget holds whatever happens). Made by a Popen whose wait never sees
    the end, while the real process is killed underneath."""
    import subprocess

    real = children.child_python.start

    class Stuck(subprocess.Popen[bytes]):
        def wait(self, timeout: float | None = None) -> int:
            if timeout is None:
                raise AssertionError("waited on a child with no bound")
            super().wait(timeout)
            raise subprocess.TimeoutExpired(self.args, timeout)

    def start(module: str, args: Sequence[str] = (), **kwargs: object) -> object:
        process = real(module, args, **kwargs)  # type: ignore[arg-type]
        process.__class__ = Stuck
        return process

    monkeypatch.setattr(children.child_python, "start", start)
    (child,) = run(1, behaviours("hang"), clock=JumpClock(all_marked(marks, "doing", 1)))
    assert child.status == "hung"
    assert child.reason is not None and "did not end after SIGKILL" in child.reason
    child.process.__class__ = subprocess.Popen  # type: ignore[union-attr]
    assert child.process is not None and child.process.wait(timeout=10) == -signal.SIGKILL


# ---- timing, with real deadlines (slow: generous margins) ------------------------------------


@pytest.mark.slow
def test_a_hung_child_ends_by_its_deadline_plus_the_grace(marks: Path) -> None:
    began = time.monotonic()
    done = run_children(MODULE, targets(2), behaviours("hang", "hang"), began + 4.0,
                        lambda: False, None)  # fmt: skip
    took = time.monotonic() - began
    assert {c.status for c in done} == {"hung"}
    assert took < 4.0 + STOP_GRACE_S + 3.0
    assert_nothing_left(done, marks)


@pytest.mark.slow
def test_a_stop_ends_every_child_within_the_grace(marks: Path) -> None:
    stopped_at: list[float] = []
    ready = all_marked(marks, "doing", 3)

    def stop() -> bool:
        if not stopped_at and ready():
            stopped_at.append(time.monotonic())
        return bool(stopped_at)

    done = run_children(MODULE, targets(3), behaviours("hang", "hang", "hang"),
                        time.monotonic() + 120.0, stop, None)  # fmt: skip
    assert stopped_at and time.monotonic() - stopped_at[0] < STOP_GRACE_S + 1.5
    assert {c.status for c in done} == {"interrupted"}
    assert_nothing_left(done, marks)


# ---- a workload kept at work while its caller samples (`run --load`) -------------------------


def background(
    count: int,
    args: Callable[[Target], list[str]] = lambda t: ["soak", "--seconds", "600"],
    clock: Callable[[], float] = time.monotonic,
) -> Background:
    return Background(MODULE, targets(count), args, time.monotonic() + FAR, clock=clock,
                      grace_s=GRACE_S)  # fmt: skip


def beats(folder: Path, target: Target) -> int:
    path = folder / f"{target.uuid}.soak.beats"
    return int(path.read_text() or 0) if path.exists() else 0


def test_a_background_workload_is_heard_while_its_caller_does_other_work(
    marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each child writes ~100 KiB every beat: unheard, it would block in its write after the
    pipe's 64 KiB, in its first beat. Ten beats each (1 MB, sixteen pipes full) come only if its
    output is read on the runner's own thread while the caller waits; `end()` then finds them
    at their work: ok."""
    from fakes.procs import wait_until

    monkeypatch.setenv(BEHAVIOUR_VARIABLE, "work")
    running = background(2)
    running.start(ready_by=time.monotonic() + FAR)
    assert [(s, e) for _, s, _, e in running.outcome()] == [("running", "fake")] * 2
    wait_until(lambda: all(beats(marks, t) >= 10 for t in targets(2)), "ten beats each")
    done = running.end()
    assert [(c.status, c.reason) for c in done] == [("ok", None)] * 2
    assert running.end() == done  # ending twice is ending once
    assert_nothing_left(done, marks)


def test_ending_a_background_workload_judges_what_each_child_was_doing(marks: Path) -> None:
    """At work (even one ignoring SIGTERM: SIGKILL ends it) is ok; never ready is a failure,
    named; each is reaped."""
    from fakes.procs import wait_until

    kinds = ("hang", "no-ready", "error")
    running = background(3, behaviours(*kinds))
    running.start(ready_by=time.monotonic())  # none is waited for: they are heard on its thread
    heard = {(0, "running", "fake"), (2, "failed", "fake")}
    wait_until(lambda: heard <= {(t.index, s, e) for t, s, _, e in running.outcome()}, "them")
    done = running.end()
    assert [c.status for c in done] == ["ok", "failed", "failed"]
    assert done[1].reason == "not ready when its work was ended, while starting"
    assert done[2].reason == "cuInit failed (fake): CUDA_ERROR_NO_DEVICE"
    assert_nothing_left(done, marks)


def test_a_background_workload_is_ended_at_its_deadline_without_its_caller(marks: Path) -> None:
    """Its caller may never call `end()` (a check abandoned at its deadline): the children
    are killed and reaped at the workload's own deadline all the same, named hung (the clock
    passes it once both said what they do)."""
    from fakes.procs import wait_until

    running = background(2, behaviours("hang", "hang"), JumpClock(all_marked(marks, "doing", 2)))
    running.start(ready_by=time.monotonic() + FAR)
    wait_until(lambda: all(s != "running" for _, s, _, _ in running.outcome()), "the deadline")
    done = running.children
    assert [c.status for c in done] == ["hung", "hung"]
    assert all(c.reason and c.reason.endswith("; killed") for c in done)
    assert_nothing_left(done, marks)


def test_a_background_workload_without_its_thread_ends_its_children_at_once(
    marks: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Children nobody would hear (the system refused the thread) must not outlive the call."""

    def refuse(*args: object, name: str, **kwargs: object) -> None:
        raise CannotStart(f"could not start a thread ({name}): can't start new thread")

    monkeypatch.setattr(children, "start_daemon", refuse)
    running = background(2)
    with pytest.raises(CannotStart, match="workload"):
        running.start(ready_by=time.monotonic() + FAR)
    assert_nothing_left(running.children, marks)
