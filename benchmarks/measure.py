"""Run a command as a child and measure it: wall time, CPU time and peak RSS (wait4)."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    wall_s: float
    cpu_s: float
    max_rss_mb: float
    returncode: int


def run(argv: list[str], env: dict[str, str] | None = None) -> Sample:
    # Output goes to a real file, not /dev/null: GNU grep stops at the first match when its
    # output is /dev/null, which would make it look hundreds of times faster than it is.
    with tempfile.TemporaryFile() as sink:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL, env=env)
        _pid, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return Sample(
        wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, process.returncode
    )


def best_of(argv: list[str], repeat: int, env: dict[str, str] | None = None) -> Sample:
    samples = [run(argv, env) for _ in range(repeat)]
    return min(samples, key=lambda s: s.wall_s)
