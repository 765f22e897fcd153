"""Fixtures of the fault-injection suite: a fake node per test, the healthy baseline, pids."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
for folder in (HERE, HERE.parent, HERE.parent / "otel"):  # otel: its test receivers
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from fakes.procs import kill_by_pid, read_pids  # noqa: E402
from fault_node import FAKES, NodeSpec, make_node, run_live  # noqa: E402


@pytest.fixture
def node(tmp_path: Path) -> NodeSpec:
    """A healthy fake 2×H200 node (commands, NVML, sysfs, kernel log) to break one piece of."""
    return make_node(tmp_path)


@pytest.fixture(scope="session")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The report of the unbroken node: what every fault must leave untouched elsewhere."""
    spec = make_node(tmp_path_factory.mktemp("baseline"))
    with pytest.MonkeyPatch.context() as patch:
        report, _ = run_live(spec, patch.setattr)
    assert report.status.value == "ok", report.headline
    return report


PIDFILES: list[Path] = []


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    """Where hang helpers write their pids; whatever still runs at teardown is killed."""
    path = tmp_path / "pids.txt"
    PIDFILES.append(path)
    yield path
    kill_by_pid(read_pids(path))


@pytest.fixture(scope="session", autouse=True)
def _sweep_hung_commands() -> Iterator[None]:
    """Again at the end of the session: an abandoned check's thread may start a hanging
    command after its test's teardown."""
    yield
    for path in PIDFILES:
        kill_by_pid(read_pids(path))


@pytest.fixture(autouse=True)
def _release_nvml() -> Iterator[None]:
    """Let NVML calls a test left blocked return, so their threads end with the test."""
    yield
    while FAKES:
        FAKES.pop().release()
