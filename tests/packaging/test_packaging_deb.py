"""The .deb: its contents, and its entry point run from an unpacked root (no install, no root).

Needs a built package: `SITSCHECK_DEB=path/to/sitscheck_*.deb` (tools/ci-packaging.sh builds
one with packaging/deb/build.sh and sets it); skipped otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEB = os.environ.get("SITSCHECK_DEB")
pytestmark = [
    pytest.mark.skipif(not DEB, reason="no SITSCHECK_DEB: build one with packaging/deb/build.sh"),
    pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb is not installed"),
]
EXPECTED = (
    "./usr/bin/sitscheck",
    "./usr/sbin/sitscheck-healthcheck",
    "./usr/sbin/sitscheck-accept-node",
    "./usr/share/sitscheck/k8s/accept-job.yaml",
    "./usr/lib/systemd/system/sitscheck.service",
    "./usr/lib/systemd/system/sitscheck.timer",
    "./usr/lib/systemd/system/sitscheck-daemon.service",
    "./usr/lib/tmpfiles.d/sitscheck.conf",
    "./usr/lib/sysusers.d/sitscheck.conf",
    "./etc/sitscheck/config.yaml",
    "./etc/default/sitscheck",
    "./usr/share/sitscheck/npd/sitscheck-plugin-monitor.json",
    "./usr/lib/sitscheck/python/sitscheck/cli.py",
    "./usr/lib/sitscheck/python/sitscheck/rules/kernel-log.yaml",
)


def dpkg_deb(*args: str) -> str:
    assert DEB is not None
    return subprocess.run(
        ["dpkg-deb", *args], capture_output=True, text=True, check=True, timeout=120
    ).stdout


def test_contents() -> None:
    assert DEB is not None
    listing = {line.split()[-1] for line in dpkg_deb("--contents", DEB).splitlines()}
    missing = [path for path in EXPECTED if path not in listing]
    assert missing == []
    assert not any(p.startswith("./usr/lib/sitscheck/python/bin/") for p in listing)


def test_the_unit_user_is_made_before_the_acl_naming_it(tmp_path: Path) -> None:
    """The packaged sysusers.d and tmpfiles.d files are the checkout's, and postinst runs
    systemd-sysusers before systemd-tmpfiles (whose ACL entry names the user)."""
    assert DEB is not None
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", DEB, str(root)], check=True, timeout=120)
    systemd = REPO / "packaging" / "systemd"
    for packaged, source in (
        ("usr/lib/sysusers.d/sitscheck.conf", "sitscheck.sysusers"),
        ("usr/lib/tmpfiles.d/sitscheck.conf", "sitscheck.tmpfiles"),
    ):
        assert (root / packaged).read_text() == (systemd / source).read_text()
    control = tmp_path / "control"
    subprocess.run(["dpkg-deb", "-e", DEB, str(control)], check=True, timeout=120)
    postinst = (control / "postinst").read_text()
    sysusers = postinst.index("systemd-sysusers sitscheck.conf")
    assert sysusers < postinst.index("systemd-tmpfiles --create sitscheck.conf")
    assert (control / "postinst").stat().st_mode & 0o111


def test_control_and_conffiles() -> None:
    assert DEB is not None
    assert dpkg_deb("--field", DEB, "Package").strip() == "sitscheck"
    assert dpkg_deb("--field", DEB, "Depends").strip().startswith("python3 (>=")
    conffiles = dpkg_deb("--info", DEB, "conffiles").split()
    assert conffiles == ["/etc/default/sitscheck", "/etc/sitscheck/config.yaml"]


def test_installed_entry_point_runs_from_an_unpacked_root(tmp_path: Path) -> None:
    assert DEB is not None
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", DEB, str(root)], check=True, timeout=120)
    entry = root / "usr" / "bin" / "sitscheck"
    version = subprocess.run(
        [str(entry), "--version"], capture_output=True, text=True, timeout=60, check=True
    )
    assert version.stdout.startswith("sitscheck ")
    bundle = REPO / "tests" / "bundles" / "h200x2-idle-v0"
    done = subprocess.run(
        [str(entry), "run", "--from", str(bundle), "--output", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode in (0, 1, 2, 3), done.stderr
    report = json.loads(done.stdout)
    assert report["mode"] == "replay" and report["checks"]
