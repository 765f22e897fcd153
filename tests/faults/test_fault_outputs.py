"""A report destination that cannot be written (read-only or full folder) at the end of a run."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from fault_expect import assert_within
from fault_node import BUNDLE, Invoked, invoke, refuse_writes, wait_for
from sitscheck.models import Report
from sitscheck.reporters.outputs import LATE_WRITE_S


def run_to(target: Path) -> Invoked:
    return invoke("run", "--from", str(BUNDLE), "-o", f"json={target}", "-o", "text")


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "reports"
    folder.mkdir()
    refuse_writes(monkeypatch.setattr, folder, errno.EROFS, new_only=False)
    return folder / "report.json"


def test_unwritable_report_file_is_unknown_and_never_a_traceback(target: Path) -> None:
    done = run_to(target)
    assert done.code == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "Read-only file system" in done.stderr
    assert not target.exists()
    assert list(target.parent.iterdir()) == []  # no temporary left behind
    assert done.elapsed < 10.0


def test_unwritable_report_file_still_delivers_the_other_outputs(target: Path) -> None:
    done = run_to(target)
    assert "driver" in done.stdout  # the text report, after the json one that failed
    assert "internal error" not in done.stderr
    assert str(target) in done.stderr


# ---- a FIFO whose reader opens it and never reads (issue #17) ------------------------------

SITSCHECK = Path(sys.executable).with_name("sitscheck")
READER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY | os.O_NONBLOCK)  # open for reading: writers may open
os.set_blocking(fd, True)
fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 4096)  # one page: a report does not fit in the pipe
open(sys.argv[2], "w").close()
if sys.argv[3] == "never":
    time.sleep(600)
got = b""
while True:  # until the writer, having written, closes (no writer yet reads as end too)
    chunk = os.read(fd, 65536)
    if not chunk and got:
        break
    got += chunk
    if not chunk:
        time.sleep(0.01)
with open(sys.argv[4], "wb") as out:
    out.write(got)
"""
RUN_TIMEOUT_S = 5.0


def fifo_with_reader(tmp_path: Path, name: str, how: str) -> tuple[Path, subprocess.Popen[bytes]]:
    """A FIFO, and a process that has it open for reading (`how`: "reads" it all into
    `NAME.got`, or "never" reads), ready once its marker exists."""
    fifo, ready = tmp_path / name, tmp_path / f"{name}.ready"
    os.mkfifo(fifo)
    argv = [sys.executable, "-c", READER, str(fifo), str(ready), how, str(tmp_path / "got")]
    reader = subprocess.Popen(argv)
    wait_for(ready.exists, 30.0, "the FIFO's reader")
    return fifo, reader


def run_cli(*outputs: str) -> tuple[subprocess.CompletedProcess[str], float]:
    argv = [str(SITSCHECK), "run", "--from", str(BUNDLE), "--run-timeout", str(RUN_TIMEOUT_S)]
    for output in outputs:
        argv += ["-o", output]
    began = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    return done, time.monotonic() - began


@pytest.fixture
def readers() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for reader in started:
        reader.kill()
        reader.wait()


@pytest.mark.parametrize("output", ["json", "prom"])
def test_a_fifo_whose_reader_never_reads_fails_alone_within_the_deadline_installed_cli(
    tmp_path: Path, readers: list[subprocess.Popen[bytes]], output: str
) -> None:
    """The reader opened the FIFO (so the non-blocking open succeeds) but never reads: the
    write must not wait on it past the run's deadline (before the fix: blocked until killed)."""
    folder = tmp_path / "textfile"
    folder.mkdir()
    name = "report.json" if output == "json" else "textfile/sitscheck.prom"
    fifo, reader = fifo_with_reader(tmp_path, name, "never")
    readers.append(reader)
    spec = f"json={fifo}" if output == "json" else f"prom={folder}"
    target = tmp_path / "report.txt"
    done, elapsed = run_cli(spec, f"text={target}", "text")

    assert done.returncode == 3, done.stderr
    # the bound is the run's deadline, or LATE_WRITE_S after the checks if that comes later,
    # plus start-up and rules on a loaded machine: generous, the hang it guards against is forever
    assert_within(elapsed, RUN_TIMEOUT_S + LATE_WRITE_S + 30.0)
    assert f"--output {spec}: its reader took " in done.stderr, done.stderr
    assert "not written whole" in done.stderr
    assert "Traceback" not in done.stderr
    assert "checks:" in done.stdout  # the other outputs are still delivered
    assert "checks:" in target.read_text()
    assert reader.poll() is None  # the reader is still there, still not reading


def test_a_fifo_whose_reader_reads_gets_the_whole_report_installed_cli(
    tmp_path: Path, readers: list[subprocess.Popen[bytes]]
) -> None:
    fifo, reader = fifo_with_reader(tmp_path, "report.json", "reads")
    readers.append(reader)
    regular = tmp_path / "regular.json"
    done, _ = run_cli(f"json={fifo}", f"json={regular}")

    assert done.returncode == 0, done.stderr
    reader.wait(timeout=60)
    got = (tmp_path / "got").read_bytes()
    assert len(got) > 4096  # more than the pipe holds: written as the reader read
    assert got == regular.read_bytes()
    assert msgspec.convert(json.loads(got), Report).checks


def test_stdout_a_pipe_whose_reader_never_reads_ends_within_the_deadline_installed_cli(
    tmp_path: Path, readers: list[subprocess.Popen[bytes]]
) -> None:
    """`sitscheck run -o json | reader-that-hangs`: stdout is written as the reader takes it,
    never past the run's deadline (before: the write blocked until the reader read or died).
    The file output after it is still written."""
    fifo, reader = fifo_with_reader(tmp_path, "stdout.fifo", "never")
    readers.append(reader)
    target = tmp_path / "report.txt"
    argv = [str(SITSCHECK), "run", "--from", str(BUNDLE), "--run-timeout", str(RUN_TIMEOUT_S)]
    argv += ["-o", "json", "-o", f"text={target}"]
    began = time.monotonic()
    with fifo.open("wb", buffering=0) as stdout:
        done = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120)
    elapsed = time.monotonic() - began

    assert done.returncode == 3, done.stderr
    assert_within(elapsed, RUN_TIMEOUT_S + LATE_WRITE_S + 30.0)
    assert "--output json (stdout): its reader took " in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert "checks:" in target.read_text()
    assert reader.poll() is None


def test_stdout_a_pipe_that_is_read_gets_the_whole_report_installed_cli(tmp_path: Path) -> None:
    regular = tmp_path / "regular.json"
    argv = [str(SITSCHECK), "run", "--from", str(BUNDLE), "-o", "json", "-o", f"json={regular}"]
    done = subprocess.run(argv, capture_output=True, timeout=120)  # stdout: a pipe, read
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) > 4096
    assert done.stdout == regular.read_bytes()
