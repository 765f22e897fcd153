"""Fixtures of the foundation suite: the recorded bundle, the replaying fake NVML, pid cleanup."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from fakes.fake_pynvml import FakePynvml, load_recording  # noqa: E402
from fakes.procs import kill_by_pid, read_pids  # noqa: E402

BUNDLE = TESTS / "bundles" / "h200x2-idle-v0"


@pytest.fixture(scope="session")
def bundle_dir() -> Path:
    return BUNDLE


@pytest.fixture(scope="session")
def recording() -> dict[str, Any]:
    return load_recording(BUNDLE / "nvml.json")


@pytest.fixture
def fake_nvml(recording: dict[str, Any]) -> Iterator[FakePynvml]:
    fake = FakePynvml(recording)
    yield fake
    fake.release()  # let any call a test left blocked return, so its thread ends


@pytest.fixture
def pidfile(tmp_path: Path) -> Iterator[Path]:
    """Where hang helpers write their pids; whatever still runs at teardown is killed."""
    path = tmp_path / "pids.txt"
    yield path
    kill_by_pid(read_pids(path))
