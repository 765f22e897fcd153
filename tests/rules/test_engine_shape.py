"""The shape each engine's compiled expressions are read for (`syntax.shape_of`, from the
expression's syntax tree): the comprehension count that bounds an expression and the fact
paths a GPU's scope is given. Only the reads of the scope's variables are compared: a
comprehension's own names (its variable) are not looked up in the scope."""

from __future__ import annotations

from importlib.util import find_spec

import pytest
from sitscheck.engine.cel import CELPY, GOOGLE, CelEnvironment
from sitscheck.errors import RuleError

VARIABLES = {"checks", "findings", "profile", "params", "node", "gpu"}

ENGINES = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(find_spec(module) is None, reason=f"{module} not installed"),
    )
    for name, module in ((GOOGLE, "cel_expr_python"), (CELPY, "celpy"))
]

CASES = [
    ("checks.topology.facts.nics", 0, {("checks", "topology", "facts", "nics")}),
    (".checks.a", 0, {("checks", "a")}),
    ("1 + 2", 0, set()),
    ("checks[gpu.name].x", 0, {("checks",), ("gpu", "name")}),
    ("size(checks.a.b) > params.limit", 0, {("checks", "a", "b"), ("params", "limit")}),
    (
        "checks.a.gpus.exists(g, g.index == gpu.index && g.c.d > 1)",
        1,
        {("checks", "a", "gpus"), ("gpu", "index")},
    ),
    (
        "checks.a.xs.filter(t, t.v > 0).map(t, t.w).size() == 0",
        2,
        {("checks", "a", "xs")},
    ),
    # a selection from something other than a name: the name inside is read whole or in part
    (
        "(checks.a.xs.filter(t, t.ok)[0]).port.state",
        1,
        {("checks", "a", "xs")},
    ),
    (
        "{'k': node.gpu_count, profile.name: [findings]}.k",
        0,
        {("node", "gpu_count"), ("profile", "name"), ("findings",)},
    ),
    ("has(gpu.nvlink.links)", 0, {("gpu", "nvlink", "links")}),
    ("gpu.a ? gpu.b.c : params.d.e", 0, {("gpu", "a"), ("gpu", "b", "c"), ("params", "d", "e")}),
    # literals whose text looks like code, comments
    ("gpu.m['x // y.all('] > 0 // node.z.all(", 0, {("gpu", "m")}),
    ("'''a\n\"b\" node.x''' == r'\\\\' + gpu.s + \"\\\"\"", 0, {("gpu", "s")}),
    ("{'k': gpu.a, 2: gpu.xs.exists(x, x)}.k", 1, {("gpu", "a"), ("gpu", "xs")}),
    ("gpu.xs.map(x, x.ok, x.v).size() + -1", 1, {("gpu", "xs")}),
]


def _shape(engine: str, text: str) -> tuple[int, frozenset[tuple[str, ...]] | None]:
    shape = CelEnvironment(engine).compile(text, "x.yaml", 1).shape
    reads = shape.reads and frozenset(p for p in shape.reads if p[0] in VARIABLES)
    return shape.comprehensions, reads


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("text", "comprehensions", "reads"), CASES)
def test_shape_counts_comprehensions_and_reads_paths(
    engine: str, text: str, comprehensions: int, reads: set[tuple[str, ...]]
) -> None:
    assert _shape(engine, text) == (comprehensions, frozenset(reads))


@pytest.mark.parametrize("engine", ENGINES)
def test_a_long_chain_and_nested_calls(engine: str) -> None:
    chain = "gpu." + ".".join(f"f{n}" for n in range(20))
    assert _shape(engine, chain) == (0, frozenset({("gpu", *(f"f{n}" for n in range(20)))}))
    nested = "size(" * 10 + "node.x" + ")" * 10  # the parser allows 32 levels
    assert _shape(engine, nested) == (0, frozenset({("node", "x")}))


@pytest.mark.parametrize("engine", ENGINES)
def test_brackets_nested_past_32_levels_are_refused_by_both_engines(engine: str) -> None:
    """Google's parser allows 32 levels; celpy evaluated 60 (or 300) nested parentheses on no
    run (Python's recursion ran out) yet loaded them: refused at load now, naming the line."""
    env = CelEnvironment(engine)
    env.compile("(" * 32 + "node.x" + ")" * 32, "site.yaml", 4)
    with pytest.raises(RuleError) as caught:
        env.compile("(" * 60 + "node.x" + ")" * 60, "site.yaml", 4)
    assert caught.value.line == 4 and "bad CEL expression" in caught.value.detail
