"""benchmarks.measure: a command's peak RSS counts its children's too (a scan's pre-filter
worker is one), summed, not only the largest of them as wait4 gives it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Holds 64 MiB and, from a thread that lives on (as a check's thread starts the scan's worker),
# starts a child that holds 64 MiB too; says so, and waits for stdin to close.
TREE = """
import subprocess, sys, threading
held = b"x" * (64 << 20)
code = "import sys; held = b'x' * (64 << 20); print('ready', flush=True); sys.stdin.read()"
def run():
    pipe = subprocess.PIPE
    child = subprocess.Popen([sys.executable, "-c", code], stdout=pipe, stdin=pipe)
    child.stdout.readline()
    print("ready", flush=True)
    sys.stdin.read()
    child.stdin.close()
    child.wait()
thread = threading.Thread(target=run)
thread.start()
thread.join()
"""


def test_the_tree_sampler_sums_a_process_and_the_children_of_its_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks.measure import TreeSampler

    proc = subprocess.Popen(
        [sys.executable, "-c", TREE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        sampler = TreeSampler(proc.pid)
        assert sampler.sample() >= 128 << 20  # both, each with its 64 MiB resident
        assert sampler.peak_bytes >= 128 << 20
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
