"""Old engine vs new: every recorded bundle and every aer/xid corpus sample gives what the code
before the streaming kernel-log change gave (`golden.py`, `data/golden.json`: its `made_by`
names the commit): the same events, facts (storm fields included), findings, metrics and
verdicts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from golden import GOLDEN, golden  # noqa: E402

RECORDED: dict[str, Any] = json.loads(GOLDEN.read_text())


@pytest.fixture(scope="module")
def now() -> dict[str, Any]:
    return golden()


def test_the_golden_file_covers_bundles_and_corpus(now: dict[str, Any]) -> None:
    assert len(RECORDED["bundles"]) >= 30 and len(RECORDED["corpus"]) >= 40
    assert sorted(now["bundles"]) == sorted(RECORDED["bundles"])
    # samples added since (their annotations are checked by tests/corpus) have no old output
    assert set(RECORDED["corpus"]) <= set(now["corpus"])
    assert sorted(RECORDED["storms"]) == ["bracket", "kmsg", "relative", "syslog"]


@pytest.mark.parametrize("name", sorted(RECORDED["bundles"]))
def test_a_bundle_replays_as_before(name: str, now: dict[str, Any]) -> None:
    assert now["bundles"][name] == RECORDED["bundles"][name]


@pytest.mark.parametrize("stamp", sorted(RECORDED["storms"]))
def test_a_storm_replays_as_before(stamp: str, now: dict[str, Any]) -> None:
    assert now["storms"][stamp] == RECORDED["storms"][stamp]


@pytest.mark.parametrize("name", sorted(RECORDED["corpus"]))
def test_a_corpus_sample_parses_and_judges_as_before(name: str, now: dict[str, Any]) -> None:
    assert now["corpus"][name] == RECORDED["corpus"][name]
