"""Least privilege where sitscheck runs: the systemd units, and a run by a user who is not root.

The unit checks complement tests/packaging (hardening options, systemd-analyze); these are about
*who* the service runs as and with which capabilities.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from sitscheck.contract.registry import discover
from test_packaging_units import SERVICES, UNITS, unit

NOBODY = 65534
SITSCHECK = Path(sys.executable).with_name("sitscheck")
CHECKS = len(discover())  # every installed check reports, whichever they are


# ---- the systemd units ------------------------------------------------------------------------


@pytest.mark.parametrize("name", SERVICES)
def test_the_service_keeps_only_cap_syslog(name: str) -> None:
    service = unit(name)["Service"]
    assert service["CapabilityBoundingSet"] == ["CAP_SYSLOG"]
    assert service.get("NoNewPrivileges") == ["yes"]
    assert service.get("AmbientCapabilities", [""]) in ([""], ["CAP_SYSLOG"])


@pytest.mark.parametrize("name", SERVICES)
def test_the_service_runs_as_a_dedicated_user_with_cap_syslog(name: str) -> None:
    service = unit(name)["Service"]
    user = service.get("User", ["root"])[-1]
    dynamic = service.get("DynamicUser", ["no"])[-1] == "yes"
    assert dynamic or user not in ("root", "0", ""), f"User={user}"
    if not dynamic:
        assert list(UNITS.parent.rglob("*sysusers*")), "no sysusers.d entry creates the user"
    assert service.get("AmbientCapabilities") == ["CAP_SYSLOG"]  # /dev/kmsg, dmesg_restrict=1


# ---- sitscheck run by a user who is not root --------------------------------------------------


@pytest.fixture
def shared_dir(open_dir: Callable[[int], Path]) -> Path:
    """A folder the unprivileged user can write."""
    return open_dir(0o777)


SETPRIV = shutil.which("setpriv")


def readable_by_others(path: Path) -> bool:
    return all(os.stat(p).st_mode & 0o001 for p in [path, *path.parents])


def as_unprivileged(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run as `nobody`, with no capability, when this is root (as this user otherwise).

    Where the interpreter sits in a folder others cannot enter (a pyenv under /root), the run
    keeps CAP_DAC_READ_SEARCH alone, to read it: still no CAP_SYSLOG, no writing past modes."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(cwd), "LANG": "C"}
    if os.geteuid() == 0:
        caps = "" if readable_by_others(Path(sys.executable).resolve()) else ",+dac_read_search"
        assert SETPRIV is not None
        drop = [SETPRIV, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        drop += [f"--{kind}=-all{caps}" for kind in ("inh-caps", "ambient-caps", "bounding-set")]
        argv = [*drop, "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=cwd, env=env)


@pytest.fixture
def unprivileged_ok() -> None:
    if os.geteuid() == 0 and SETPRIV is None:
        pytest.skip("root without setpriv(1) to drop to an unprivileged user")
    source = Path(__file__).resolve().parents[2] / "healthcheck"
    if not readable_by_others(source):
        pytest.skip("the source tree is not readable by other users")


@pytest.mark.usefixtures("unprivileged_ok")
def test_a_live_run_as_an_unprivileged_user_degrades_gracefully(shared_dir: Path) -> None:
    """No CAP_SYSLOG (a kernel log that may be unreadable), no write access to /var/lib: the
    run still reports every check, says why a check could not read what it needs, and exits
    with a health code, never a traceback."""
    done = as_unprivileged([str(SITSCHECK), "run", "-o", "json"], shared_dir)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert done.returncode in (0, 1, 2, 3), done.stderr
    report = json.loads(done.stdout)
    assert len(report["checks"]) == CHECKS
    xid = next(c for c in report["checks"] if c["name"] == "xid")
    if xid["status"] in ("unknown", "skipped"):  # the kernel log was refused: say where
        said = (xid.get("error") or "") + (xid.get("skip_reason") or "")
        assert "/dev/kmsg" in said, xid


@pytest.mark.usefixtures("unprivileged_ok")
def test_a_daemon_run_as_an_unprivileged_user_names_the_state_dir_it_cannot_use(
    shared_dir: Path,
) -> None:
    locked = Path("/var/lib/sitscheck-not-writable-by-nobody")
    done = as_unprivileged(
        [str(SITSCHECK), "run", "--daemon", "--state-dir", str(locked)], shared_dir
    )
    assert done.returncode == 3
    assert "Traceback" not in done.stderr and str(locked) in done.stderr, done.stderr


@pytest.mark.usefixtures("unprivileged_ok")
def test_a_daemon_run_as_an_unprivileged_user_with_its_own_state_dir_works(
    shared_dir: Path,
) -> None:
    state = shared_dir / "state"
    bundle = Path(__file__).resolve().parents[1] / "bundles" / "h200x2-idle-v0"
    argv = [str(SITSCHECK), "run", "--from", str(bundle), "--daemon", "--state-dir", str(state)]
    done = as_unprivileged(argv, shared_dir)
    assert done.returncode == 0, done.stderr
    assert (state / "state.json").stat().st_mode & 0o777 == 0o640
    if os.geteuid() == 0:
        assert (state / "state.json").stat().st_uid == NOBODY
