"""The Slurm HealthCheckProgram wrapper, against fake sitscheck / sinfo / scontrol commands."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WRAPPER = REPO / "packaging" / "slurm" / "sitscheck-healthcheck"


def fake(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def run_wrapper(tmp_path: Path, line: str, rc: int, node_state: str) -> list[str]:
    """Run the wrapper; returns the scontrol calls it made (one per line)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    calls = tmp_path / "scontrol.calls"
    fake(bin_dir, "sitscheck", f"printf '%s\\n' '{line}'\nexit {rc}\n")
    fake(bin_dir, "sinfo", f"printf '%s\\n' '{node_state}'\n")
    fake(bin_dir, "scontrol", f'printf "%s\\n" "$*" >> "{calls}"\n')
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLURMD_NODENAME": "gpu-17",
    }
    done = subprocess.run(
        ["sh", str(WRAPPER)], env=env, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    return calls.read_text().splitlines() if calls.exists() else []


CRIT = "critical: xid.79 GPU0: Xid 79 (GPU_HAS_FALLEN_OFF_THE_BUS) x1 on GPU 0 (0000:3b..."


def test_critical_drains_with_the_root_cause(tmp_path: Path) -> None:
    calls = run_wrapper(tmp_path, CRIT, 2, "idle|none")
    assert calls == [
        "update NodeName=gpu-17 State=DRAIN Reason=sitscheck: xid.79 GPU0: Xid 79 "
        "(GPU_HAS_FALLEN_OFF_THE_BUS) x1 on GPU 0 (0000:3b..."
    ]


def test_critical_refreshes_its_own_drain(tmp_path: Path) -> None:
    calls = run_wrapper(tmp_path, CRIT, 2, "drained|sitscheck: pcie_aer.fatal GPU3: old")
    assert len(calls) == 1 and "State=DRAIN" in calls[0]


@pytest.mark.parametrize("state", ["drained|maintenance by alice", "down|Not responding"])
def test_critical_leaves_a_node_drained_by_someone_else(tmp_path: Path, state: str) -> None:
    assert run_wrapper(tmp_path, CRIT, 2, state) == []


@pytest.mark.parametrize("line", ["ok: 9 of 9 checks ran, no problem found", "warning: x"])
def test_healthy_resumes_only_its_own_drain(tmp_path: Path, line: str) -> None:
    ours = run_wrapper(tmp_path / "a", line, 0, "drained|sitscheck: xid.79 GPU0: gone")
    assert ours == ["update NodeName=gpu-17 State=RESUME"]
    theirs = run_wrapper(tmp_path / "b", line, 0, "drained|maintenance by alice")
    assert theirs == []
    not_drained = run_wrapper(tmp_path / "c", line, 0, "mixed|none")
    assert not_drained == []


def test_draining_node_of_ours_is_resumed(tmp_path: Path) -> None:
    calls = run_wrapper(tmp_path, "ok: fine", 0, "draining|sitscheck: xid.79 GPU0: gone")
    assert calls == ["update NodeName=gpu-17 State=RESUME"]


@pytest.mark.parametrize(("line", "rc"), [("unknown: could not run: nvlink", 3), ("", 3)])
def test_unknown_or_failure_changes_nothing(tmp_path: Path, line: str, rc: int) -> None:
    assert run_wrapper(tmp_path, line, rc, "drained|sitscheck: xid.79 GPU0: gone") == []
    assert run_wrapper(tmp_path / "x", line, rc, "idle|none") == []


@pytest.fixture(autouse=True)
def _dirs(tmp_path: Path) -> None:
    for sub in ("a", "b", "c", "x"):
        (tmp_path / sub).mkdir()


def test_a_hung_sitscheck_is_killed_at_its_timeout_and_nothing_changes(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls, args, late = tmp_path / "scontrol.calls", tmp_path / "args", tmp_path / "late"
    fake(bin_dir, "sitscheck", f'printf "%s\\n" "$*" > "{args}"\nsleep 30\ntouch "{late}"\n')
    fake(bin_dir, "sinfo", "printf '%s\\n' 'drained|sitscheck: xid.79 GPU0: gone'\n")
    fake(bin_dir, "scontrol", f'printf "%s\\n" "$*" >> "{calls}"\n')
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLURMD_NODENAME": "gpu-17",
        "SITSCHECK_TIMEOUT": "1",
        "SITSCHECK_ARGS": "--expect-gpus 8",
    }
    done = subprocess.run(
        ["sh", str(WRAPPER)], env=env, capture_output=True, text=True, timeout=25, check=False
    )
    assert done.returncode == 0 and "not established" in done.stderr
    assert not calls.exists() and not late.exists()
    # sitscheck was given a run deadline inside the kill, the site's arguments after it
    assert args.read_text().split() == [
        "run",
        "--output",
        "npd",
        "--run-timeout",
        "25",
        "--expect-gpus",
        "8",
    ]


def test_no_answer_from_slurmctld_on_critical_changes_nothing(tmp_path: Path) -> None:
    assert run_wrapper(tmp_path, CRIT, 2, "") == []
