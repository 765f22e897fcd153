"""Shared fixtures: the shared corpus's samples (in tests/corpus/shared); folders others may
enter; each rule set compiled once a worker."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from corpus_paths import REPO_ROOT, SHARED_CORPUS

if TYPE_CHECKING:
    from sitscheck.engine.model import RuleSet

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


# A compile whose deadline is nearer than this may run out part-way (a test of that): it is
# always compiled afresh
FRESH_COMPILE_WITHIN_S = 20.0


@pytest.fixture(scope="session", autouse=True)
def rules_compiled_once() -> Iterator[None]:
    """Each distinct rule set a run compiles, compiled once a worker. Every replay compiles
    the rules it reads (`app.execute` through `app.load_rules`), nearly always the same files:
    ~540 compiles of ~0.09 s each, a fifth of the suite's CPU. The compile is a function of the
    files' bytes, the shipped folders and the CEL engine; its `RuleSet` is frozen and any
    environment of the same engine evaluates its programs. So a run given the same bytes gets
    the set compiled the first time; a file that cannot be read, an error, or a deadline less
    than FRESH_COMPILE_WITHIN_S away compiles as always. Tests of the loader itself call
    `engine.loader` and compile every time."""
    from sitscheck import app

    compile_rules = app.load_rules
    compiled: dict[tuple[Any, ...], RuleSet] = {}

    def load_rules(files: list[Path], env: Any, deadline: Any, shipped: list[Path]) -> RuleSet:
        if deadline is not None and deadline - time.monotonic() < FRESH_COMPILE_WITHIN_S:
            return compile_rules(files, env, deadline, shipped)
        try:
            read = tuple((str(path), path.read_bytes()) for path in files)
        except OSError:
            return compile_rules(files, env, deadline, shipped)
        key = (env.engine, read, tuple(str(folder.resolve()) for folder in shipped))
        if key not in compiled:
            compiled[key] = compile_rules(files, env, deadline, shipped)
        return compiled[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(app, "load_rules", load_rules)
        yield


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


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under `-m 'not slow'` (the README's test command) the slow suites' files are not even
    imported: every worker collects every file, and theirs cost ~1.5 s of each's start."""
    tests = Path(__file__).resolve().parent
    if config.option.markexpr != "not slow" or not collection_path.is_relative_to(tests):
        return None
    return str(collection_path.relative_to(tests)).startswith(SLOW_PATHS) or None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    tests = Path(__file__).resolve().parent
    for item in items:
        where = Path(str(item.fspath)).resolve()
        relative = str(where.relative_to(tests)) if where.is_relative_to(tests) else ""
        if relative.startswith(SLOW_PATHS) or any(n in item.name for n in SLOW_NAMES):
            item.add_marker(pytest.mark.slow)
