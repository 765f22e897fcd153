"""The Slurm HealthCheckProgram wrapper against a real Slurm (issue 20): Debian's munge,
slurmctld and slurmd on this one node, loopback only (`slurm_cluster.py`), sitscheck
replaying recorded bundles.

- a fault bundle drains the node with a `sitscheck:` reason;
- a healthy run resumes only its own drain;
- an operator's drain is left alone, by a healthy run and by a fault run;
- slurmctld down: the node is left as it was (the wrapper still ends well inside slurmd's
  60 s HealthCheckProgram limit).

Skipped only where the packages cannot be had: not root, or no apt-get (CI runs as root).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from slurm_cluster import Cluster, can_install, ensure_installed, missing

REPO = Path(__file__).resolve().parents[2]
WRAPPER = REPO / "packaging" / "slurm" / "sitscheck-healthcheck"
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
