"""The live kernel log falls back /dev/kmsg → dmesg → journalctl -k → a file, keeping why."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import sitscheck.sources.kernel_log as kernel_log
from fakes.commands import printing_command, write_command
from sitscheck.sources.command import CommandRunner
from sitscheck.sources.kernel_log import open_live_kernel_log

JOURNAL = (
    "Nov 29 17:58:01 node kernel: NVRM: Xid (PCI:0000:19:00): 79, GPU has fallen off the bus.\n"
    "Nov 29 17:58:02 node kernel: pcieport 0000:00:01.0: AER: Corrected error received\n"
)


def unreadable_kmsg(path: str = "") -> Iterator[str]:
    raise PermissionError(errno.EPERM, "Operation not permitted")


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    printing_command(
        folder,
        "dmesg",
        "",
        exit_code=1,
        stderr="dmesg: read kernel buffer failed: Operation not permitted",
    )
    # journalctl prints its arguments first, so the test sees how it was asked
    write_command(folder, "journalctl", f'echo "args: $*"\nprintf %s "{JOURNAL}"')
    return folder


def test_falls_back_to_journalctl_naming_earlier_failures(
    bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kernel_log, "read_kmsg", unreadable_kmsg)
    stream = open_live_kernel_log(CommandRunner(path=str(bin_dir)), timeout=5)

    assert stream.ref == "journalctl -k -b --no-pager -q"
    assert stream.lines is not None
    lines = list(stream.lines)
    assert lines[0] == "args: -k -b --no-pager -q"
    assert lines[1:] == JOURNAL.splitlines()
    assert stream.reason is not None
    assert "/dev/kmsg" in stream.reason and "Operation not permitted" in stream.reason
    assert "`dmesg` exited 1" in stream.reason and "read kernel buffer failed" in stream.reason


def test_dmesg_that_prints_nothing_is_a_failure_too(
    tmp_path: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    printing_command(bin_dir, "dmesg", "")  # exits 0, prints nothing
    monkeypatch.setattr(kernel_log, "read_kmsg", unreadable_kmsg)
    stream = open_live_kernel_log(CommandRunner(path=str(bin_dir)), timeout=5)
    assert stream.ref.startswith("journalctl")
    assert stream.reason is not None and "`dmesg` printed nothing" in stream.reason


def test_dmesg_is_preferred_when_it_works(bin_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    printing_command(bin_dir, "dmesg", "[    1.0] NVRM: loading NVIDIA UNIX driver\n")
    monkeypatch.setattr(kernel_log, "read_kmsg", unreadable_kmsg)
    stream = open_live_kernel_log(CommandRunner(path=str(bin_dir)), timeout=5)
    assert stream.ref == "dmesg"
    assert list(stream.lines or []) == ["[    1.0] NVRM: loading NVIDIA UNIX driver"]


def test_nothing_readable_gives_no_lines_and_every_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kernel_log, "read_kmsg", unreadable_kmsg)
    monkeypatch.setattr(kernel_log, "LOG_FILES", (str(tmp_path / "no-kern.log"),))
    stream = open_live_kernel_log(CommandRunner(path=str(tmp_path / "empty")), timeout=5)
    assert stream.lines is None
    assert stream.reason is not None
    for part in ("/dev/kmsg", "dmesg", "journalctl", "no-kern.log"):
        assert part in stream.reason


def test_log_file_is_the_last_resort(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "kern.log"
    log.write_text("Nov 29 kernel: one\nNov 29 kernel: two\n")
    monkeypatch.setattr(kernel_log, "read_kmsg", unreadable_kmsg)
    monkeypatch.setattr(kernel_log, "LOG_FILES", (str(tmp_path / "absent.log"), str(log)))
    stream = open_live_kernel_log(CommandRunner(path=str(tmp_path / "empty")), timeout=5)
    assert stream.ref == str(log)
    assert list(stream.lines or []) == ["Nov 29 kernel: one", "Nov 29 kernel: two"]
    assert stream.reason is not None and "absent.log" in stream.reason


def test_kmsg_path_is_honoured(
    tmp_path: Path, bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "no-kmsg"
    monkeypatch.setattr(kernel_log, "KMSG", str(missing))
    opened: list[str] = []
    real_open = os.open

    def spy(path: str, flags: int, *args: int) -> int:
        opened.append(str(path))
        fd: int = real_open(path, flags, *args)
        return fd

    monkeypatch.setattr(os, "open", spy)
    stream = open_live_kernel_log(CommandRunner(path=str(bin_dir)), timeout=5)
    assert "/dev/kmsg" not in opened
    assert stream.ref.startswith("journalctl")
    assert stream.reason is not None and str(missing) in stream.reason
