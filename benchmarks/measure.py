"""Run a command as a child and measure it: wall time, CPU time and peak RSS.

Peak RSS is that of the command's own processes together: the command and those of its
children that run the same program (sitscheck's Python children, such as the `--load` probe,
are the interpreter started again: `sources.child_python`). wait4 gives only the largest of
the whole tree (the kernel keeps no sum), so the sum is also sampled while it runs
(`TreeSampler`, from /proc, every few milliseconds) and the larger of the two is taken. The
commands it runs (nvidia-smi, dmesg) are other programs' memory, not counted in the sum. The
sum counts the pages the processes share (the interpreter's own) once in each: it is an upper
bound.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

_SAMPLE_S = 0.005
_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class Sample:
    wall_s: float
    cpu_s: float
    max_rss_mb: float  # the command with its children, together (see the module's note)
    returncode: int


def run(argv: list[str], env: dict[str, str] | None = None) -> Sample:
    # Output goes to a real file, not /dev/null: GNU grep stops at the first match when its
    # output is /dev/null, which would make it look hundreds of times faster than it is.
    with tempfile.TemporaryFile() as sink:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL, env=env)
        sampler = TreeSampler(process.pid)
        sampler.start()
        _pid, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        sampler.stop()
    process.returncode = os.waitstatus_to_exitcode(status)
    peak_mb = max(usage.ru_maxrss * 1024, sampler.peak_bytes) / (1024 * 1024)
    return Sample(wall, usage.ru_utime + usage.ru_stime, peak_mb, process.returncode)


def best_of(argv: list[str], repeat: int, env: dict[str, str] | None = None) -> Sample:
    samples = [run(argv, env) for _ in range(repeat)]
    return min(samples, key=lambda s: s.wall_s)


class TreeSampler(threading.Thread):
    """The largest sum of the resident sets of a process and of those of its children that run
    the same program, seen while it runs (the children of each of its threads:
    /proc/PID/task/TID/children)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_bytes = 0
        self._done = threading.Event()
        self._program = _program(pid)

    def run(self) -> None:
        while not self._done.wait(_SAMPLE_S):
            self.sample()

    def sample(self) -> int:
        """The sum now (and the peak kept)."""
        own = [child for child in _children(self.pid) if _program(child) == self._program]
        now = sum(_resident(pid) for pid in [self.pid, *own])
        self.peak_bytes = max(self.peak_bytes, now)
        return now

    def stop(self) -> None:
        self._done.set()
        self.join()


def _program(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                found += (int(child) for child in handle.read().split())
        except OSError:
            continue
    return found


def _resident(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0
