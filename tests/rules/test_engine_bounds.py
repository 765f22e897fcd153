"""Rule evaluation is bounded (issue 17): a step budget, the run's deadline, the syntax tree.

- comprehensions hidden behind a comment (`.` //c `all(`) are counted on the syntax tree:
  seven nested ones are refused by `rules validate`, naming file and line;
- an evaluation that runs past its step budget is UNKNOWN naming its rule and why, and the
  other rules are still evaluated;
- past the run's deadline, rules not evaluated (or not compiled) are UNKNOWN, named;
  celpy's evaluation looks at the deadline as it goes.
Each for both engines where both are installed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from importlib.util import find_spec
from pathlib import Path

import pytest
from sitscheck.engine import budget
from sitscheck.engine.cel import CELPY, GOOGLE, CelEnvironment
from sitscheck.engine.cel_celpy import CelpyEngine
from sitscheck.engine.evaluate import NOT_COMPILED, NOT_EVALUATED, evaluate_rules
from sitscheck.engine.loader import load_rules
from sitscheck.errors import RuleError
from sitscheck.models import CheckResult, Status

ENGINES = [
    pytest.param(name, marks=pytest.mark.skipif(find_spec(module) is None, reason="missing"))
    for name, module in ((GOOGLE, "cel_expr_python"), (CELPY, "celpy"))
]


def nested(depth: int) -> str:
    """`depth` nested `.all()` over `params.items`, each `.` and `all(` parted by a comment."""
    body = "true"
    for level in reversed(range(depth)):
        body = f"params.items.//c{level}\n  all(x{level}, {body})"
    return body


def rule_file(folder: Path, when: str, rule_id: str = "test.nested", extra: str = "") -> Path:
    path = folder / f"{rule_id}.yaml"
    indented = textwrap.indent(when, "      ")
    path.write_text(
        "params:\n  items: [1, 2, 3]\nrules:\n"
        f"  - id: {rule_id}\n    when: |\n{indented}\n"
        "    severity: warning\n    message: m\n" + extra
    )
    return path


FAST_RULE = (
    "  - id: test.fast\n    when: size(params.items) > 0\n    severity: critical\n    message: m\n"
)


@pytest.mark.parametrize("engine", ENGINES)
def test_comment_hidden_comprehensions_are_counted_and_refused(tmp_path: Path, engine: str) -> None:
    path = rule_file(tmp_path, nested(7))
    with pytest.raises(RuleError) as caught:
        load_rules([path], CelEnvironment(engine))
    assert "7 comprehensions" in str(caught.value) and caught.value.line == 6


def test_rules_validate_refuses_them_naming_file_and_line(tmp_path: Path) -> None:
    path = rule_file(tmp_path, nested(7))
    done = subprocess.run(
        [sys.executable, "-m", "sitscheck", "rules", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 3
    assert f"{path}:6:" in done.stderr and "comprehensions" in done.stderr
    two = rule_file(tmp_path, nested(2), "test.two")
    allowed = subprocess.run(
        [sys.executable, "-m", "sitscheck", "rules", "validate", str(two)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert allowed.returncode == 0, allowed.stderr


@pytest.mark.parametrize("engine", ENGINES)
def test_a_rule_out_of_budget_is_unknown_and_named_the_rest_evaluated(
    tmp_path: Path, engine: str
) -> None:
    env = CelEnvironment(engine)
    # two nested comprehensions over 200 items: 40,200 steps, past the 10,000 budget
    when = "params.big.all(x, params.big.all(y, x + y >= 0))"
    path = rule_file(tmp_path, when, extra=FAST_RULE)
    path.write_text(
        path.read_text().replace(
            "  items: [1, 2, 3]\n", f"  items: [1]\n  big: {list(range(200))}\n"
        )
    )
    verdicts = evaluate_rules(load_rules([path], env), [], None, env)
    slow = next(v for v in verdicts if v.rule == "test.nested")
    assert slow.status == Status.UNKNOWN
    assert slow.reason and budget.EXHAUSTED in slow.reason
    fast = next(v for v in verdicts if v.rule == "test.fast")
    assert fast.status == Status.CRITICAL


@pytest.mark.parametrize("engine", ENGINES)
def test_within_budget_the_same_rule_is_evaluated(tmp_path: Path, engine: str) -> None:
    """Control: 20 items (420 steps) fit the budget and the rule fires."""
    env = CelEnvironment(engine)
    path = rule_file(tmp_path, "params.items.all(x, params.items.all(y, x + y >= 0))")
    path.write_text(path.read_text().replace("[1, 2, 3]", str(list(range(20)))))
    verdicts = evaluate_rules(load_rules([path], env), [], None, env)
    assert [v.status for v in verdicts] == [Status.WARNING]


@pytest.mark.parametrize("engine", ENGINES)
def test_past_the_deadline_rules_are_unknown_not_evaluated(tmp_path: Path, engine: str) -> None:
    env = CelEnvironment(engine)
    ruleset = load_rules([rule_file(tmp_path, "true", extra=FAST_RULE)], env)
    results = [CheckResult(name="fake", status=Status.OK)]
    verdicts = evaluate_rules(ruleset, results, None, env, deadline=time.monotonic() - 1)
    assert [(v.rule, v.status, v.reason) for v in verdicts] == [
        ("test.nested", Status.UNKNOWN, NOT_EVALUATED),
        ("test.fast", Status.UNKNOWN, NOT_EVALUATED),
    ]
    on_time = evaluate_rules(ruleset, results, None, env, deadline=time.monotonic() + 600)
    assert [v.status for v in on_time] == [Status.WARNING, Status.CRITICAL]


@pytest.mark.parametrize("engine", ENGINES)
def test_rules_left_when_loading_passes_the_deadline_are_unknown(
    tmp_path: Path, engine: str
) -> None:
    env = CelEnvironment(engine)
    path = rule_file(tmp_path, "true", extra=FAST_RULE)
    ruleset = load_rules([path], env, deadline=time.monotonic() - 1)
    assert [r.id for r in ruleset.rules] == ["test.nested", "test.fast"]
    verdicts = evaluate_rules(ruleset, [], None, env)
    assert {(v.rule, v.status, v.reason) for v in verdicts} == {
        ("test.nested", Status.UNKNOWN, NOT_COMPILED),
        ("test.fast", Status.UNKNOWN, NOT_COMPILED),
    }


def test_celpy_looks_at_the_deadline_during_an_evaluation() -> None:
    engine = CelpyEngine()
    program = engine.compile("l.all(x, x >= 0)")
    scope = engine.activation({"l": list(range(500))})
    assert engine.evaluate(program, scope, None) is True
    with pytest.raises(budget.BudgetExceeded) as caught:
        engine.evaluate(program, scope, time.monotonic() - 1)
    assert str(caught.value) == budget.DEADLINE_PASSED


def test_the_meter_counts_steps_up_to_the_budget() -> None:
    meter = budget.Meter(None, budget=3)
    for _ in range(3):
        meter.step()
    with pytest.raises(budget.BudgetExceeded):
        meter.step()


@pytest.mark.parametrize("engine", ENGINES)
def test_an_expression_nested_past_what_the_engine_evaluates_is_refused_at_load(
    engine: str,
) -> None:
    """Google's parser refuses nesting past 32 levels; celpy parsed 300 and every evaluation
    then ran out of Python's recursion (the rule UNKNOWN on every run): refused at load too."""
    with pytest.raises(RuleError) as caught:
        CelEnvironment(engine).compile("(" * 300 + "node.x" + ")" * 300, "site.yaml", 4)
    assert caught.value.line == 4 and "bad CEL expression" in caught.value.detail
