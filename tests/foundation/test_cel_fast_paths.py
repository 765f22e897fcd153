"""The CEL engine's fast paths give celpy's own answers (issue 10: whole-run time and memory).

- `&&` / `||` skip the right operand where the left decides; values and error messages are
  those of celpy's runner (a differential test over random expressions);
- compiled parse trees share one small position record per source position; an evaluation
  error still names celpy's line and column;
- each GPU's activation shares the node's converted values.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

import celpy
import pytest
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError
from sitscheck.engine.cel_celpy import CelpyEngine, _short_circuit_runner

ATOMS = (
    "true",
    "false",
    "1 == 1",
    "1 == 2",
    "a.x > 2",
    "a.missing",
    "has(a.missing)",
    "has(a.x)",
    "1 / 0 == 1",
    "1",
    "'s'",
    "null",
    "a.b && true",
    "a.list[9] == 1",
    "type(a.x) == int",
    "size(a.list) > 2",
    "a.s.startsWith('x')",
    "int('q') == 1",
    "a.list.exists(v, v > 2 && v < 5)",
    "a.list.all(v, v > 0 || v.foo)",
    "a.list.exists(v, false && v.nope)",
)
ACTIVATION = {"a": {"x": 3, "list": [1, 3, 7], "s": "xyz", "b": 4}}


def expression(rng: random.Random, depth: int) -> str:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(ATOMS)
    left, right = expression(rng, depth - 1), expression(rng, depth - 1)
    kind = rng.random()
    if kind < 0.35:
        return f"({left} && {right})"
    if kind < 0.7:
        return f"({left} || {right})"
    if kind < 0.8:
        return f"!({left})"
    if kind < 0.9:
        return f"({left} ? {right} : {expression(rng, depth - 1)})"
    return f"[{left}, {right}].exists(z, z && {expression(rng, depth - 1)})"


def outcome(env: Any, text: str, activation: Any) -> tuple[str, ...]:
    try:
        value = env.program(env.compile(text)).evaluate(activation)
    except CELEvalError as exc:
        return ("error", str(exc.args[0]) if exc.args else str(exc))
    except Exception as exc:
        return ("raised", type(exc).__name__, str(exc))
    return ("value", type(value).__name__, repr(value))


def test_short_circuit_gives_celpys_values_and_errors() -> None:
    runner = _short_circuit_runner()
    assert runner is not None
    standard, ours = celpy.Environment(), celpy.Environment(runner_class=runner)
    activation = json_to_cel(ACTIVATION)
    rng = random.Random(10)
    kinds = set()
    for _ in range(400):
        text = expression(rng, 4)
        expected = outcome(standard, text, activation)
        assert outcome(ours, text, activation) == expected, text
        kinds.add(expected[0])
    assert kinds == {"value", "error"}  # both kinds were exercised


class Spy(celtypes.MapType):
    """A CEL map that records the keys read from it."""

    read: ClassVar[list[str]] = []

    def __getitem__(self, key: Any) -> Any:
        Spy.read.append(str(key))
        return super().__getitem__(key)


@pytest.mark.parametrize(
    ("text", "value"), [("false && spy.x == 1", False), ("true || spy.x == 1", True)]
)
def test_the_right_operand_is_skipped_where_the_left_decides(text: str, value: bool) -> None:
    runner = _short_circuit_runner()
    activation = {"spy": Spy({celtypes.StringType("x"): celtypes.IntType(1)})}
    for env, reads in ((celpy.Environment(), ["x"]), (celpy.Environment(runner_class=runner), [])):
        Spy.read = []
        assert env.program(env.compile(text)).evaluate(activation) == value
        assert Spy.read == reads


def test_errors_keep_celpys_words_and_positions() -> None:
    env = CelpyEngine()
    text = "has(gpu.a) &&\n  gpu.a.b + gpu.a.c > params.limit"
    program = env.compile(text)
    standard = celpy.Environment()
    plain = standard.program(standard.compile(text))
    activation = json_to_cel({"gpu": {"a": {"b": 1}}, "params": {"limit": 0}})
    with pytest.raises(CELEvalError) as ours:
        program.evaluate(activation)
    with pytest.raises(CELEvalError) as theirs:
        plain.evaluate(activation)
    assert (ours.value.args, ours.value.line, ours.value.column) == (
        theirs.value.args,
        theirs.value.line,
        theirs.value.column,
    )
