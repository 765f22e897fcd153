"""Shared helpers of the oom_kill plugin's tests: the corpus and the one kernel-log pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sitscheck.contract import scan_lines

from sitscheck_oom_kill.check import OomKillCheck
from sitscheck_oom_kill.parse import OomKill

CORPUS = Path(__file__).parent / "corpus"
SAMPLES = sorted(CORPUS.glob("*.txt"))


def sample(prefix: str) -> list[str]:
    """The lines of the corpus sample whose name starts with `prefix` ("007")."""
    (path,) = CORPUS.glob(f"{prefix}-*.txt")
    return path.read_text(encoding="utf-8").splitlines()


def expected(path: Path) -> list[dict[str, Any]]:
    kills: list[dict[str, Any]] = json.loads(
        path.with_suffix(".expected.json").read_text(encoding="utf-8")
    )["kills"]
    return kills


def scan(lines: list[str]) -> list[OomKill]:
    """The kills the check's handler finds in raw log lines, fed as the run's one kernel-log
    pass feeds them (every log-tool prefix stripped by sitscheck's line parser)."""
    count, results = scan_lines(lines, {"oom_kill": OomKillCheck.kernel_log})
    assert count == len(lines)
    kills: list[OomKill] = results["oom_kill"]
    return kills
