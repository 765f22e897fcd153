"""The atheris drivers start, fuzz two hundred inputs without a finding, and between them
cover every target (the long runs are by hand: docs/RELIABILITY.md)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz_targets import TARGETS

HERE = Path(__file__).resolve().parent
DRIVERS = sorted(HERE.glob("atheris_*.py"))
needs_atheris = pytest.mark.skipif(
    importlib.util.find_spec("atheris") is None, reason="atheris is not installed"
)


def targets_of(driver: Path) -> set[str]:
    (call,) = re.findall(r"atheris_main\(\[(.*?)\]\)", driver.read_text())
    return set(re.findall(r'"(\w+)"', call))


def test_every_target_has_a_driver() -> None:
    covered = set().union(*(targets_of(driver) for driver in DRIVERS))
    assert covered == set(TARGETS)


@needs_atheris
@pytest.mark.parametrize("driver", DRIVERS, ids=[d.stem for d in DRIVERS])
def test_driver_runs_clean(driver: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    done = subprocess.run(
        [sys.executable, str(driver), str(corpus), "-runs=200", "-rss_limit_mb=2048"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # libFuzzer ends "Done N runs", N the asked 200 or one more (its last input counted)
    assert re.search(r"Done (200|201) runs", done.stderr), done.stderr[-3000:]
    assert any(corpus.iterdir())  # seeded from real samples
