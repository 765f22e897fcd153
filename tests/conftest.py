"""Shared fixtures: the shared corpus's samples (in tests/corpus/shared); folders others may
enter."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from corpus_paths import REPO_ROOT, SHARED_CORPUS

__all__ = ["REPO_ROOT", "SHARED_CORPUS"]


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the CPUs this process may use. Many tests wait on a
    child process or a deadline (hung workloads, killed commands): the extra worker keeps the
    CPUs busy meanwhile (2 cores: 153 s with 2 workers, 118 s with 3)."""
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return (len(usable) if usable else os.cpu_count() or 1) + 1


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-expected",
        action="store_true",
        help="rewrite tests/storm/expected/ from the code under test (then read the diff)",
    )


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The shared corpus's samples, as the repository holds them (tests/corpus/shared)."""
    return SHARED_CORPUS


@pytest.fixture
def open_dir() -> Iterator[Callable[[int], Path]]:
    """`open_dir(mode)`: a new folder other users may enter (pytest's tmp_path is root's, 0700),
    for tests that run something as another user; removed afterwards."""
    made: list[Path] = []

    def make(mode: int) -> Path:
        folder = Path(tempfile.mkdtemp(prefix="sitscheck-open-"))
        folder.chmod(mode)
        made.append(folder)
        return folder

    yield make
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


# Suites kept for `.ci/run` (the README's test command leaves them out with `-m "not slow"`):
# the fault and security suites (whole CLI runs against a fake node, waiting out deadlines,
# or as another user),
# coverage-guided and mutation fuzzing, property-based (hypothesis) suites, the plugin
# installed into a fresh venv, a real Slurm cluster, secrets through every delivery path, the
# CEL engines' random-expression differential, and the streams of tens of megabytes to
# gigabytes that prove memory stays bounded. Also the old-engine differential (every bundle
# replayed under each CEL engine: tests/storm/test_expected.py holds every bundle's facts and
# verdicts under the default one).
SLOW_PATHS = (
    "faults/",
    "fuzz/",
    "property/",
    "plugins/",
    "packaging/test_packaging_slurm_real.py",
    "security/",
    "foundation/test_cel_fast_paths.py",
    "rules/test_engine_differential.py",
)
SLOW_NAMES = ("gigabyte", "megabyte")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = Path(__file__).resolve().parent
    for item in items:
        where = Path(str(item.fspath)).resolve()
        relative = str(where.relative_to(tests)) if where.is_relative_to(tests) else ""
        if relative.startswith(SLOW_PATHS) or any(n in item.name for n in SLOW_NAMES):
            item.add_marker(pytest.mark.slow)
