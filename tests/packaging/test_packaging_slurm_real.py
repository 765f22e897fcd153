"""The Slurm scripts against a real Slurm: Debian's munge, slurmctld and slurmd on this one
node, loopback only (`slurm_cluster.py`).

The HealthCheckProgram wrapper (issue 20), sitscheck replaying recorded bundles:
- a fault bundle drains the node with a `sitscheck:` reason;
- a healthy run resumes only its own drain;
- an operator's drain is left alone, by a healthy run and by a fault run;
- slurmctld down: the node is left as it was (the wrapper still ends well inside slurmd's
  60 s HealthCheckProgram limit).

The acceptance script `sitscheck-accept-node` (issue 30), with a fake sitscheck that exits
0/1/2/3, and with `sitscheck accept` itself on this GPU-less machine:
- the node is drained while accept runs, and resumed only on ok;
- otherwise it stays drained with the headline as the reason (unknown included), and the
  HealthCheckProgram wrapper's healthy runs leave that drain alone;
- a running job is waited for (up to SITSCHECK_DRAIN_WAIT), accept never runs beside it.

Skipped only where the packages cannot be had: not root, or no apt-get (CI runs as root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from slurm_cluster import Cluster, can_install, ensure_installed, missing

REPO = Path(__file__).resolve().parents[2]
WRAPPER = REPO / "packaging" / "slurm" / "sitscheck-healthcheck"
ACCEPT = REPO / "packaging" / "slurm" / "sitscheck-accept-node"
FAULT = REPO / "tests" / "bundles" / "faults" / "gpu-lost-gpu1"
HEALTHY = REPO / "tests" / "bundles" / "h200x2-idle-v0"
SITSCHECK = shutil.which("sitscheck", path=str(Path(sys.executable).parent)) or "sitscheck"
SLURMD_LIMIT_S = 60.0  # slurmd kills a HealthCheckProgram running longer


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if missing():
        why = can_install()
        if why is not None:
            pytest.skip(why)
        ensure_installed()  # a failure here fails the tests: the machine should have it
    slurm = Cluster(tmp_path_factory.mktemp("slurm"))
    try:
        slurm.start()
        yield slurm
    finally:
        slurm.close()


@pytest.fixture
def idle(cluster: Cluster) -> Cluster:
    """The node idle with no reason, whatever the test before left."""
    if "drain" in cluster.state()[0]:
        cluster.scontrol("update", f"NodeName={cluster.node}", "State=RESUME")
    deadline = time.monotonic() + 20
    while cluster.state()[0] != "idle":
        assert time.monotonic() < deadline, cluster.state()
        time.sleep(0.2)
    return cluster


def run_wrapper(cluster: Cluster, bundle: Path) -> tuple[int, float, str]:
    env = {
        **cluster.env,
        "SITSCHECK": SITSCHECK,
        "SITSCHECK_ARGS": f"--from {bundle}",
        "SLURMD_NODENAME": cluster.node,
    }
    began = time.monotonic()
    done = subprocess.run(
        ["sh", str(WRAPPER)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return done.returncode, time.monotonic() - began, done.stderr


def test_a_fault_bundle_drains_the_node_with_a_sitscheck_reason(idle: Cluster) -> None:
    rc, took, said = run_wrapper(idle, FAULT)
    assert rc == 0, said
    state, _ = idle.state()
    assert "drain" in state, (state, said)
    assert idle.reason().startswith("sitscheck: driver.gpu_lost GPU1"), idle.reason()
    assert took < SLURMD_LIMIT_S


def test_a_healthy_run_resumes_its_own_drain(idle: Cluster) -> None:
    run_wrapper(idle, FAULT)
    assert "drain" in idle.state()[0]
    rc, took, said = run_wrapper(idle, HEALTHY)
    assert rc == 0, said
    assert idle.state() == ("idle", "none"), said
    assert took < SLURMD_LIMIT_S


def test_an_operators_drain_is_left_alone(idle: Cluster) -> None:
    reason = "maintenance by ops (ticket 4711)"
    done = idle.scontrol("update", f"NodeName={idle.node}", "State=DRAIN", f"Reason={reason}")
    assert done.returncode == 0, done.stderr
    for bundle in (HEALTHY, FAULT):  # neither resumes it nor rewrites its reason
        rc, _, said = run_wrapper(idle, bundle)
        assert rc == 0, said
        assert "drain" in idle.state()[0], said
        assert idle.reason() == reason


def test_slurmctld_down_leaves_the_node_untouched(idle: Cluster) -> None:
    idle.stop("slurmctld")
    try:
        rc, took, said = run_wrapper(idle, FAULT)
        assert rc == 1 and "slurmctld did not answer" in said, said
        assert took < SLURMD_LIMIT_S
    finally:
        idle.start_controller()
    deadline = time.monotonic() + 30
    while idle.state()[0] not in ("idle", "drained", "draining"):
        assert time.monotonic() < deadline, idle.state()
        time.sleep(0.2)
    assert idle.state() == ("idle", "none")


def test_the_wrapper_stays_inside_slurmds_limit_by_its_defaults() -> None:
    text = WRAPPER.read_text()
    defaults = {
        name: float(text.split(f"{name}:-", 1)[1].split("}", 1)[0])
        for name in ("SITSCHECK_TIMEOUT", "SLURM_CMD_TIMEOUT")
    }
    kill_grace = 3.0  # timeout -k 3
    worst = defaults["SITSCHECK_TIMEOUT"] + kill_grace + 2 * (defaults["SLURM_CMD_TIMEOUT"] + 3)
    assert worst < SLURMD_LIMIT_S - 5, worst
    assert os.access(WRAPPER, os.R_OK)


def fake_sitscheck(folder: Path, line: str, rc: int) -> Path:
    """A sitscheck that records the node's state as Slurm has it while it runs, prints `line`
    and exits `rc`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "sitscheck"
    path.write_text(
        "#!/bin/sh\n"
        f'sinfo --noheader --Node --format="%T|%E" > "{folder / "during"}"\n'
        f"echo '{line}'\nexit {rc}\n"
    )
    path.chmod(0o755)
    return path


def run_accept(cluster: Cluster, sitscheck: str, **extra: str) -> tuple[int, str]:
    env = {**cluster.env, "SITSCHECK": sitscheck, "SLURMD_NODENAME": cluster.node, **extra}
    done = subprocess.run(
        ["sh", str(ACCEPT), "--budget", "60"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, done.stderr


def test_accept_drains_for_the_run_and_resumes_on_ok(idle: Cluster, tmp_path: Path) -> None:
    fake = fake_sitscheck(tmp_path, "ok: 14 of 14 checks ran, no problem found", 0)
    rc, said = run_accept(idle, str(fake))
    assert rc == 0, said
    assert (tmp_path / "during").read_text().strip() == "drained|sitscheck accept"
    assert idle.state() == ("idle", "none"), said


@pytest.mark.parametrize(
    ("line", "rc"),
    [
        ("warning: soak.temperature GPU0: 84 C during the soak", 1),
        ("critical: memtest.bad_words GPU0: 1 bad word at 0x7f0000000000", 2),
        ("unknown: could not run: soak", 3),
    ],
)
def test_accept_leaves_the_node_drained_with_the_headline(
    idle: Cluster, tmp_path: Path, line: str, rc: int
) -> None:
    got, said = run_accept(idle, str(fake_sitscheck(tmp_path, line, rc)))
    assert got == rc, said
    assert "drain" in idle.state()[0], said
    assert idle.reason() == f"sitscheck accept: {line}"


def test_accept_itself_on_a_node_without_gpus_keeps_it_drained(idle: Cluster) -> None:
    if shutil.which("nvidia-smi") or Path("/proc/driver/nvidia").exists():
        pytest.skip("a GPU node: this test needs accept's answer where nothing can be loaded")
    rc, said = run_accept(idle, SITSCHECK)
    # unknown (no phase could run), as NPD's exit code: the script asks for `--output npd`
    assert rc == 2, said
    assert "drain" in idle.state()[0], said
    assert idle.reason().startswith("sitscheck accept: unknown: "), idle.reason()


def test_the_health_check_never_resumes_an_acceptance_drain(idle: Cluster, tmp_path: Path) -> None:
    run_accept(idle, str(fake_sitscheck(tmp_path, "critical: compute.repeat_mismatch GPU2", 2)))
    reason = idle.reason()
    rc, _, said = run_wrapper(idle, HEALTHY)  # slurmd's periodic check, healthy snapshot
    assert rc == 0, said
    assert "drain" in idle.state()[0] and idle.reason() == reason, said


@pytest.fixture
def job(idle: Cluster) -> Iterator[Callable[[int], None]]:
    """Start a job sleeping N seconds on the node (waits until it runs); cancelled after."""

    def start(seconds: int) -> None:
        done = idle.command("sbatch", "--output=/dev/null", f"--wrap=sleep {seconds}")
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 30
        while idle.state()[0] not in ("allocated", "mixed"):
            assert time.monotonic() < deadline, idle.state()
            time.sleep(0.2)

    yield start
    idle.command("scancel", f"--nodelist={idle.node}")


def test_accept_waits_for_the_running_job_to_end(
    idle: Cluster, job: Callable[[int], None], tmp_path: Path
) -> None:
    job(3)
    fake = fake_sitscheck(tmp_path, "ok: 14 of 14 checks ran, no problem found", 0)
    rc, said = run_accept(idle, str(fake), SITSCHECK_DRAIN_WAIT="120")
    assert rc == 0, said
    assert (tmp_path / "during").read_text().strip() == "drained|sitscheck accept"  # no job
    assert idle.state() == ("idle", "none"), said


def test_accept_does_not_run_beside_a_job_that_outlasts_the_wait(
    idle: Cluster, job: Callable[[int], None], tmp_path: Path
) -> None:
    job(600)
    rc, said = run_accept(idle, str(fake_sitscheck(tmp_path, "ok: fine", 0)),
                          SITSCHECK_DRAIN_WAIT="4")  # fmt: skip
    assert rc == 3, said
    assert not (tmp_path / "during").exists()  # sitscheck never started
    assert idle.state()[0] == "draining", said
    assert idle.reason() == "sitscheck accept: not run: jobs still running after 4 s (draining)"
