"""Fixtures of the rule-set suite: the recorded idle bundle's check results, the rule set."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from rule_scenarios import BUNDLES, replay  # noqa: E402
from sitscheck.models import CheckResult  # noqa: E402

IDLE = BUNDLES / "h200x2-idle-v0"


@pytest.fixture(scope="session")
def idle_results() -> list[CheckResult]:
    """The idle bundle's check results: the healthy facts the unit cases edit."""
    return replay(IDLE).checks
