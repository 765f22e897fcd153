"""benchmarks.measure: a command's peak RSS counts its children that run the same program
too (a `--load` probe is one), summed, not only the largest of them as wait4 gives
it; the other programs it runs are not counted."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Holds 64 MiB and, from a thread that lives on (as a check's thread starts its probe),
# starts a child that holds 64 MiB too; says so, and waits for stdin to close.
TREE = """
import subprocess, sys, threading
held = b"x" * (64 << 20)
code = "import sys; held = b'x' * (64 << 20); print('ready', flush=True); sys.stdin.read()"
def run():
    pipe = subprocess.PIPE
    child = subprocess.Popen([sys.executable, "-c", code], stdout=pipe, stdin=pipe)
    # another program (a copy of the interpreter, elsewhere), holding as much: not counted
    other = subprocess.Popen([sys.argv[1], "-c", code], stdout=pipe, stdin=pipe)
    other.stdout.readline()
    child.stdout.readline()
    print("ready", flush=True)
    sys.stdin.read()
    child.stdin.close()
    child.wait()
    other.stdin.close()
    other.wait()
thread = threading.Thread(target=run)
thread.start()
thread.join()
"""


def test_the_tree_sampler_sums_a_process_and_the_children_of_its_threads(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.syspath_prepend(str(ROOT))
    from benchmarks.measure import TreeSampler

    other = tmp_path / "other-python"
    shutil.copy(Path(sys.executable).resolve(), other)
    proc = subprocess.Popen(
        [sys.executable, "-c", TREE, str(other)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        sampler = TreeSampler(proc.pid)
        # both interpreters, each with its 64 MiB resident; the other program's are not counted
        now = sampler.sample()
        assert 128 << 20 <= now < 176 << 20
        assert sampler.peak_bytes >= 128 << 20
        assert _program_count(proc.pid) == 3  # the three processes were there to be seen
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def _program_count(pid: int) -> int:
    from benchmarks.measure import _children

    return 1 + len(_children(pid))
