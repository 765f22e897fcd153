"""What a rule set's expressions read, and the scope's values cut down to it.

Each compiled expression says which paths it reads (chains of field selections from a name,
`checks.topology.facts.nics`; a name used any other way is read whole), where its engine
tells (`model.Shape.reads`). A scope then holds only those parts of the values: the node's
scope not every check's facts (a 256-GPU topology's 65,280 matrix cells, read by no rule),
a GPU's scope not the node's values again for each GPU. Nothing a rule reads is left out,
so every verdict is the same with or without the cut.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .model import Path, Rule


def reads_of(rules: Iterable[Rule], scope: str) -> frozenset[Path] | None:
    """Every path the expressions of the rules of `scope` can read; None when one of them
    does not say (an expression left uncompiled)."""
    exprs = [e for r in rules if r.scope == scope for e in (r.when, r.guard, *r.placeholders) if e]
    if any(expr.shape.reads is None for expr in exprs):
        return None
    return frozenset(path for expr in exprs for path in expr.shape.reads or ())


def below(reads: frozenset[Path] | None, name: str) -> frozenset[Path] | None:
    """The paths read below `name` (`gpu.nvlink.x` -> `nvlink.x`); None: anything."""
    if reads is None or (name,) in reads:
        return None
    return frozenset(path[1:] for path in reads if len(path) > 1 and path[0] == name)


def prune(values: dict[str, Any], reads: frozenset[Path] | None) -> dict[str, Any]:
    """`values` with only what `reads` can reach (all of it for None): a read that ends at a
    value keeps the whole of that value; one that goes through a list keeps the list."""
    if reads is None:
        return values
    out: dict[str, Any] = {}
    for path in reads:
        source, target = values, out
        for depth, key in enumerate(path):
            if key not in source:
                break
            value = source[key]
            if depth == len(path) - 1 or not isinstance(value, dict):
                target[key] = value  # the whole value (a read of part of it may come later)
                break
            if target.get(key) is value:
                break  # kept whole already
            source, target = value, target.setdefault(key, {})
    return out
