"""Reports to render: a healthy replayed node, one whose kernel log shows Xid 79, a daemon run."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.daemon import apply_daemon_state
from sitscheck.models import Report

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "bundles" / "h200x2-idle-v0"
XID_LINES = (
    "3,371,9000000,-;NVRM: Xid (PCI:0000:00:06): 79, pid=1234, name=python3, "
    "GPU has fallen off the bus.\n"
    "3,372,9000100,-;NVRM: GPU 0000:00:06.0: GPU has fallen off the bus.\n"
    "4,373,9000200,-;NVRM: Xid (PCI:0000:00:07): 13, pid=2211, name=python3, Graphics SM Warp "
    "Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address \x1b[31m\x00\n"
)


def replay(bundle: Path) -> Report:
    return execute(RunRequest(RunConfig(), str(bundle)))


@pytest.fixture(scope="session")
def ok_report() -> Report:
    return replay(RECORDED)


@pytest.fixture(scope="session")
def xid_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    bundle = tmp_path_factory.mktemp("xid") / "node"
    shutil.copytree(RECORDED, bundle)
    with (bundle / "dmesg.txt").open("a", encoding="utf-8") as out:
        out.write(XID_LINES)
    return bundle


@pytest.fixture(scope="session")
def critical_report(xid_bundle: Path) -> Report:
    return replay(xid_bundle)


@pytest.fixture(scope="session")
def daemon_report(critical_report: Report, tmp_path_factory: pytest.TempPathFactory) -> Report:
    """A second daemon run: xid.79 persisting (no cursor here), the rest as it was."""
    state = tmp_path_factory.mktemp("state")
    t0 = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
    apply_daemon_state(critical_report, state, t0)
    return apply_daemon_state(critical_report, state, t0 + timedelta(minutes=5))
