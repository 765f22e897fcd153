"""docs/ACCEPTANCE.md says what the code does: its plans are the ones `sitscheck accept`
prints for the declared phases, its phase table gives their times, and it documents every
test-only fault and engine there is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sitscheck.accept.command import ENGINES, phase_shares
from sitscheck.accept.plan import Plan, make_plan
from sitscheck.app import selected_checks
from sitscheck.config import RunConfig
from sitscheck.contract.evidence import gather
from sitscheck.probes.accept.__main__ import INJECTIONS

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "ACCEPTANCE.md"
BUDGET_S = 300.0


def plan(gpus: list[int]) -> Plan:
    """The default plan for `gpus`, from the phases the checks declare (as `accept` makes it)."""
    return make_plan(BUDGET_S, phase_shares(gather(selected_checks(RunConfig()))), gpus, [])


def doc_plans() -> list[list[str]]:
    blocks = re.findall(r"```\n(sitscheck accept: plan for .*?)\n```", DOC.read_text(), re.S)
    return [block.splitlines() for block in blocks]


@pytest.mark.parametrize(("which", "gpus"), [(0, [0]), (1, list(range(8)))])
def test_the_plans_shown_are_the_plans_made(which: int, gpus: list[int]) -> None:
    expected = "\n".join(plan(gpus).lines())
    assert len(doc_plans()) == 2
    assert "\n".join(doc_plans()[which]) == expected, f"docs/ACCEPTANCE.md should show:\n{expected}"


def test_the_phase_table_gives_the_plans_times() -> None:
    text = DOC.read_text()
    for phase in plan([0]).phases:
        row = re.search(rf"^\| {phase.name} \|.*\| ([^|]*) \|$", text, re.M)
        assert row is not None, phase.name
        assert row.group(1).startswith(f"{phase.seconds:.0f} s"), (phase.name, row.group(1))


def test_every_test_only_fault_and_engine_is_documented() -> None:
    text = DOC.read_text()
    for fault in INJECTIONS:
        assert f"`{fault}:GPU`" in text, fault
    for engine in ENGINES:
        assert f"`{engine}`" in text, engine
    assert "test-only" in text


def test_the_readme_points_at_it() -> None:
    readme = (REPO / "README.md").read_text()
    usage = readme.split("## Usage", 1)[1].split("```", 2)[1]
    assert re.search(r"^sitscheck accept\b", usage, re.M), usage
    assert "docs/ACCEPTANCE.md" in readme
