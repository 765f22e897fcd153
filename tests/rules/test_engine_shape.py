"""The syntax-tree shape cel-expr-python's programs are read for (`cel_google.shape`): the
comprehension count that bounds an expression and the fact paths a GPU's scope is given."""

from __future__ import annotations

from importlib.util import find_spec

import pytest

pytestmark = pytest.mark.skipif(
    find_spec("cel_expr_python") is None, reason="cel-expr-python not installed"
)

CASES = [
    ("checks.topology.facts.nics", 0, {("checks", "topology", "facts", "nics")}),
    (".checks.a", 0, {("checks", "a")}),
    ("1 + 2", 0, set()),
    ("checks[gpu.name].x", 0, {("checks",), ("gpu", "name")}),
    ("size(checks.a.b) > params.limit", 0, {("checks", "a", "b"), ("params", "limit")}),
    (
        "checks.a.gpus.exists(g, g.index == gpu.index && g.c.d > 1)",
        1,
        {("checks", "a", "gpus"), ("g", "index"), ("gpu", "index"), ("g", "c", "d"), ("@result",)},
    ),
    (
        "checks.a.xs.filter(t, t.v > 0).map(t, t.w).size() == 0",
        2,
        # the macros' expansions: the accumulator, and filter's variable appended whole
        {("checks", "a", "xs"), ("t", "v"), ("t", "w"), ("t",), ("@result",)},
    ),
    # a selection from something other than a name: the name inside is read whole or in part
    (
        "(checks.a.xs.filter(t, t.ok)[0]).port.state",
        1,
        {("checks", "a", "xs"), ("t", "ok"), ("t",), ("@result",)},
    ),
    (
        "{'k': node.gpu_count, profile.name: [findings]}.k",
        0,
        {("node", "gpu_count"), ("profile", "name"), ("findings",)},
    ),
    ("has(gpu.nvlink.links)", 0, {("gpu", "nvlink", "links")}),
    ("gpu.a ? gpu.b.c : params.d.e", 0, {("gpu", "a"), ("gpu", "b", "c"), ("params", "d", "e")}),
]


@pytest.mark.parametrize(("text", "comprehensions", "reads"), CASES)
def test_shape_counts_comprehensions_and_reads_paths(
    text: str, comprehensions: int, reads: set[tuple[str, ...]]
) -> None:
    from sitscheck.engine.cel_google import GoogleEngine

    _program, shape = GoogleEngine().compile(text)
    assert shape.comprehensions == comprehensions
    assert shape.reads == frozenset(reads)


def test_a_long_chain_and_nested_calls() -> None:
    from sitscheck.engine.cel_google import GoogleEngine

    chain = "gpu." + ".".join(f"f{n}" for n in range(20))
    _program, shape = GoogleEngine().compile(chain)
    assert shape.reads == frozenset({("gpu", *(f"f{n}" for n in range(20)))})
    nested = "size(" * 10 + "node.x" + ")" * 10  # the parser allows 32 levels
    _program, shape = GoogleEngine().compile(nested)
    assert shape.reads == frozenset({("node", "x")})
