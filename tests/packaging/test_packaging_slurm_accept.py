"""packaging/slurm/sitscheck-accept-node against fake sitscheck / sinfo / scontrol / timeout
commands (a node state in a file that scontrol's drain and resume change); the same script
against a real Slurm is in test_packaging_slurm_real.py."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "packaging" / "slurm" / "sitscheck-accept-node"
TIMEOUT = shutil.which("timeout") or "timeout"
CRIT = "critical: compute.repeat_mismatch GPU3: silent data corruption suspected: repeat(s) 4"


class Node:
    """A fake Slurm node and a fake sitscheck in `folder`."""

    def __init__(self, folder: Path, state: str = "idle|none", scontrol_rc: int = 0) -> None:
        self.folder = folder
        self.bin = folder / "bin"
        self.bin.mkdir(parents=True)
        self.state_file = folder / "state"
        self.state_file.write_text(state + "\n")
        self.calls = folder / "scontrol.calls"
        self.ran = folder / "sitscheck.ran"
        self.timeouts = folder / "timeout.calls"
        self._fake("sinfo", f'cat "{self.state_file}"\n')
        self._fake(
            "scontrol",
            f'printf "%s\\n" "$*" >> "{self.calls}"\n'
            f"[ {scontrol_rc} -eq 0 ] || exit {scontrol_rc}\n"
            'case "$*" in\n'
            f'*State=DRAIN*) r="$*"; printf "drained|%s\\n" "${{r#*Reason=}}" '
            f'> "{self.state_file}" ;;\n'
            f'*State=RESUME*) echo "idle|none" > "{self.state_file}" ;;\n'
            "esac\n",
        )
        # `timeout -k K LIMIT COMMAND...`: recorded, then COMMAND run (by the real timeout)
        self._fake("timeout", f'printf "%s\\n" "$*" >> "{self.timeouts}"\nexec {TIMEOUT} "$@"\n')

    def _fake(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(0o755)

    def sitscheck(self, body: str) -> None:
        """The fake sitscheck: records its arguments and the node's state while it runs."""
        record = f'{{ printf "%s\\n" "$*"; cat "{self.state_file}"; }} > "{self.ran}"\n'
        self._fake("sitscheck", record + body)

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "PATH": f"{self.bin}:{os.environ['PATH']}",
            "SLURMD_NODENAME": "gpu-17",
            "TMPDIR": str(self.folder),
            **extra,
        }

    def run(self, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["sh", str(SCRIPT), *args],
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def scontrol_calls(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def state(self) -> str:
        return self.state_file.read_text().strip()


DRAIN = "update NodeName=gpu-17 State=DRAIN Reason=sitscheck accept"
RESUME = "update NodeName=gpu-17 State=RESUME"


def test_ok_drains_runs_accept_then_resumes(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.sitscheck("echo 'ok: 14 of 14 checks ran, no problem found'\nexit 0\n")
    done = node.run("--expect-gpus", "8")
    assert done.returncode == 0, done.stderr
    assert node.scontrol_calls() == [DRAIN, RESUME]
    args, during = node.ran.read_text().splitlines()
    assert args == "accept --output npd --expect-gpus 8"
    assert during == "drained|sitscheck accept"  # the node was out of service while it ran
    assert node.state() == "idle|none"
    assert "accepted and resumed gpu-17" in done.stderr


@pytest.mark.parametrize(
    ("line", "rc"),
    [
        ("warning: soak.temperature GPU0: 84 C during the soak", 1),
        (CRIT, 2),
        ("unknown: could not run: compute, memtest, soak", 3),
        ("unknown: interrupted by SIGTERM", 3),
    ],
)
def test_anything_but_ok_leaves_it_drained_with_the_headline(
    tmp_path: Path, line: str, rc: int
) -> None:
    node = Node(tmp_path)
    node.sitscheck(f"echo 'sitscheck accept: plan for 300 s' >&2\necho '{line}'\nexit {rc}\n")
    done = node.run()
    assert done.returncode == rc, done.stderr
    assert node.scontrol_calls() == [DRAIN, f"{DRAIN}: {line}"]
    assert node.state() == f"drained|sitscheck accept: {line}"


def test_exit_0_without_an_ok_headline_is_not_an_acceptance(tmp_path: Path) -> None:
    """An exit code rule that counts a warning as 0 (NPD's, say) must not resume the node."""
    node = Node(tmp_path)
    line = "warning: soak.power GPU1: settled at 512 W of 700"
    node.sitscheck(f"echo '{line}'\nexit 0\n")
    done = node.run()
    assert done.returncode == 3, done.stderr
    assert RESUME not in node.scontrol_calls()
    assert node.state() == f"drained|sitscheck accept: {line}"


def test_no_headline_names_the_exit_status(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.sitscheck("exit 137\n")
    done = node.run()
    assert done.returncode == 137, done.stderr
    assert node.state() == "drained|sitscheck accept: no report (sitscheck exit 137)"


def test_a_node_it_cannot_drain_is_not_tested(tmp_path: Path) -> None:
    node = Node(tmp_path, scontrol_rc=1)
    node.sitscheck("echo 'ok: fine'\nexit 0\n")
    done = node.run()
    assert done.returncode == 3
    assert not node.ran.exists()
    assert "could not drain gpu-17" in done.stderr
    assert node.scontrol_calls() == [DRAIN]  # and no resume


def test_jobs_still_running_after_the_wait_leave_it_drained_untested(tmp_path: Path) -> None:
    """The wait is the script's pauses between looks at the node (`sleep 2` each), counted: a
    fake `sleep` records each and returns at once."""
    node = Node(tmp_path)
    node._fake("sinfo", "echo 'draining|sitscheck accept'\n")  # a job that does not end
    slept = tmp_path / "slept"
    node._fake("sleep", f'printf "%s\\n" "$*" >> "{slept}"\n')
    node.sitscheck("echo 'ok: fine'\nexit 0\n")
    done = node.run(SITSCHECK_DRAIN_WAIT="6")
    assert done.returncode == 3, done.stderr
    assert slept.read_text().split() == ["2", "2", "2"]
    assert not node.ran.exists()
    assert node.scontrol_calls() == [
        DRAIN,
        f"{DRAIN}: not run: jobs still running after 6 s (draining)",
    ]


def test_no_wait_runs_at_once(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node._fake("sinfo", "echo 'draining|sitscheck accept'\n")
    node.sitscheck("echo 'ok: fine'\nexit 0\n")
    done = node.run(SITSCHECK_DRAIN_WAIT="0")
    assert done.returncode == 0, done.stderr
    assert node.scontrol_calls() == [DRAIN, RESUME]


@pytest.mark.parametrize(
    ("args", "limit"),
    [((), "360"), (("--budget", "120"), "180"), (("--budget=90.5",), "150")],
)
def test_the_backstop_is_the_budget_and_a_minute(
    tmp_path: Path, args: tuple[str, ...], limit: str
) -> None:
    node = Node(tmp_path)
    node.sitscheck("echo 'ok: fine'\nexit 0\n")
    assert node.run(*args).returncode == 0
    (call,) = [c for c in node.timeouts.read_text().splitlines() if " sitscheck accept " in c]
    assert call.split()[:3] == ["-k", "10", limit]


def test_a_sitscheck_that_no_longer_answers_is_stopped(tmp_path: Path) -> None:
    node = Node(tmp_path)
    node.sitscheck("while :; do sleep 0.2; done\n")
    done = node.run(SITSCHECK_TIMEOUT="1")
    assert done.returncode == 124, done.stderr
    assert node.state() == "drained|sitscheck accept: no report (sitscheck exit 124)"


def test_sigterm_reaches_accept_and_the_node_stays_drained(tmp_path: Path) -> None:
    node = Node(tmp_path)
    got, armed = tmp_path / "got", tmp_path / "armed"
    node.sitscheck(
        f'trap \'echo TERM > "{got}"; echo "unknown: interrupted by SIGTERM"; exit 3\' TERM\n'
        f': > "{armed}"\n'
        "while :; do sleep 0.1; done\n"
    )
    script = subprocess.Popen(
        ["sh", str(SCRIPT)], env=node.env(), stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not armed.exists():  # sitscheck has started and set its trap
            assert script.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        script.send_signal(signal.SIGTERM)
        _, said = script.communicate(timeout=60)
    finally:
        if script.poll() is None:
            script.kill()
    assert script.returncode == 3, said
    assert got.read_text() == "TERM\n"
    assert node.state() == "drained|sitscheck accept: unknown: interrupted by SIGTERM"
