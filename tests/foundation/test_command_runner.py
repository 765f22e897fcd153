"""`CommandRunner`: argv only, LC_ALL=C, capped output, the process group killed on timeout."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from fakes.commands import HANG, hanging_command, printing_command
from fakes.procs import HeldClock, read_pids, still_running
from sitscheck.sources.command import CommandResult, CommandRunner

PY = sys.executable


def test_runs_argv_and_captures_output() -> None:
    result = CommandRunner().run(
        [PY, "-c", "import sys; print('out'); print('err', file=sys.stderr)"], 10
    )
    assert result.ok
    assert result.returncode == 0
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"
    assert result.failure_reason() is None
    assert not result.timed_out and not result.truncated and result.error is None


def test_argv_is_never_given_to_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    hostile = f"x; touch {marker} && echo $HOME `id`"
    result = CommandRunner().run([PY, "-c", "import sys; print(sys.argv[1])", hostile], 10)
    assert result.ok
    assert result.stdout.strip() == hostile  # passed through literally, nothing expanded
    assert not marker.exists()


def test_lc_all_c_reaches_the_child_over_the_callers_locale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    runner = CommandRunner(extra_env={"LC_ALL": "fr_FR.UTF-8", "SITSCHECK_PROBE": "yes"})
    code = (
        "import os; print(os.environ['LC_ALL'], os.environ['LANG'], os.environ['SITSCHECK_PROBE'])"
    )
    result = runner.run([PY, "-c", code], 10)
    assert result.stdout.split() == ["C", "C", "yes"]


def test_output_past_the_cap_is_cut_there_and_the_command_killed() -> None:
    runner = CommandRunner(output_cap=100)
    result = runner.run([PY, "-c", "import sys; sys.stdout.write('a' * 5000)"], 10)
    assert not result.ok  # cut evidence is not judged as if whole
    assert result.truncated and result.overflow == "stdout"
    assert result.stdout == "a" * 100
    assert result.failure_reason() == (
        f"`{result.display}` printed more than the cap on stdout; cut there, killed"
    )


def test_output_at_the_cap_is_not_truncated() -> None:
    runner = CommandRunner(output_cap=100)
    result = runner.run([PY, "-c", "import sys; sys.stdout.write('b' * 100)"], 10)
    assert not result.truncated
    assert result.stdout == "b" * 100


def test_nonzero_exit_is_a_failure_naming_command_and_stderr() -> None:
    result = CommandRunner().run([PY, "-c", "import sys; sys.exit('no GPUs found')"], 10)
    assert not result.ok
    assert result.returncode == 1
    reason = result.failure_reason()
    assert reason is not None
    assert PY in reason and "exited 1" in reason and "no GPUs found" in reason


def test_command_not_found_is_an_error_not_an_exception(tmp_path: Path) -> None:
    result = CommandRunner(path=str(tmp_path)).run(["nvidia-smi", "-L"], 5)
    assert isinstance(result, CommandResult)
    assert not result.ok
    assert result.returncode is None
    assert result.error is not None and "not found" in result.error
    reason = result.failure_reason()
    assert reason is not None and "nvidia-smi -L" in reason and "could not run" in reason


def test_private_path_finds_only_its_commands(tmp_path: Path) -> None:
    printing_command(tmp_path, "nvidia-smi", "GPU 0: fake\n")
    runner = CommandRunner(path=str(tmp_path))
    assert runner.which("nvidia-smi") == str(tmp_path / "nvidia-smi")
    assert runner.which("ls") is None
    assert runner.run(["nvidia-smi", "-L"], 5).stdout == "GPU 0: fake\n"


def test_empty_argv_is_refused() -> None:
    with pytest.raises(ValueError):
        CommandRunner().run([], 1)


@pytest.mark.parametrize("ignore_term", [False, True], ids=["plain", "ignores-sigterm"])
def test_timeout_kills_the_command_and_its_child(pidfile: Path, ignore_term: bool) -> None:
    argv = [PY, str(HANG), "--pidfile", str(pidfile)]
    if ignore_term:
        argv.insert(2, "--ignore-term")
    # the timeout counts from the moment the helper and its child run, however long it took
    # to start them
    ready = HeldClock(lambda: len(read_pids(pidfile)) == 2)
    started = time.monotonic()
    result = CommandRunner(clock=ready).run(argv, timeout=1.0)
    elapsed = time.monotonic() - started

    assert result.timed_out
    assert result.returncode is None
    assert not result.ok
    assert elapsed >= 0.9  # its timeout waited out (the helper hangs for ever: it was killed)
    reason = result.failure_reason()
    assert reason is not None and "did not answer within 1 s" in reason and str(HANG) in reason
    pids = read_pids(pidfile)
    assert len(pids) == 2, "the helper did not start its child in time"
    assert still_running(pids) == []


def test_timeout_kills_a_hanging_command_found_on_the_path(tmp_path: Path, pidfile: Path) -> None:
    hanging_command(tmp_path / "bin", "nvidia-smi", pidfile, ignore_term=True)
    ready = HeldClock(lambda: len(read_pids(pidfile)) == 2)
    runner = CommandRunner(path=str(tmp_path / "bin"), clock=ready)
    result = runner.run(["nvidia-smi", "-q"], timeout=0.8)
    assert result.timed_out
    assert result.failure_reason() == "`nvidia-smi -q` did not answer within 0.8 s; killed"
    assert result.stdout == "hanging\n"  # what it printed before the kill is kept
    pids = read_pids(pidfile)
    assert len(pids) == 2
    assert still_running(pids) == []
