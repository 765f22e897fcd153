"""An expression's syntax as `rules validate` reads it, the same nodes from either CEL engine.

Each engine parses with its own parser and turns its own tree into these few nodes
(`GoogleEngine.syntax`: cel-expr-python's serialized `cel.expr.ParsedExpr`, whose macros are
expanded into comprehensions; `CelpyEngine.syntax`: celpy's lark parse tree), so validation
needs only the engine a run uses (issue 29 item 10: the runtime dependencies alone). The
fact-path check (`fact_paths`) walks them. `at` is where the node is in the expression's
text (a character offset), for the line a problem is reported on. `shape_of` reads a
compiled expression's bounds and the paths it reads from these nodes too.
"""

from __future__ import annotations

from msgspec import Struct

from .model import Path, Shape

# The macros that visit a list's items (or a map's keys) with a variable.
COMPREHENSIONS = frozenset({"all", "exists", "exists_one", "filter", "map"})


class Node(Struct, frozen=True):
    """A part of an expression whose value is computed (an operator, a function, a list or map
    built in the expression, a literal): only its `parts` are read."""

    parts: tuple[Node, ...] = ()


class Name(Node, frozen=True):
    """A name: a variable of the scope, a comprehension's variable or a CEL type name (`int`);
    written `.name`, from the root of the namespace."""

    name: str = ""
    at: int = 0


class Select(Node, frozen=True):
    """`operand.field` (and `has(operand.field)`)."""

    operand: Node = Node()
    field: str = ""
    at: int = 0


class Constant(Node, frozen=True):
    """A literal value; `value` where it is a string or an integer (what can index), else None."""

    value: str | int | None = None


class Index(Node, frozen=True):
    """`operand[key]`."""

    operand: Node = Node()
    key: Node = Node()
    at: int = 0


class Loop(Node, frozen=True):
    """A comprehension macro: `over.<macro>(var, ...)`. `parts` are read with `var` bound to
    an item of `over`; `mapped`: what `map` makes each item into; `hidden`: a name the
    engine's expansion adds (its accumulator), read as a computed value."""

    macro: str = ""
    var: str = ""
    over: Node = Node()
    mapped: Node | None = None
    hidden: str = ""
    at: int = 0


def shape_of(tree: Node, comprehensions: int | None = None) -> Shape:
    """What an expression does: its comprehensions (the `Loop`s, unless the engine counts
    them) and the paths it reads: each chain of field selections from a name
    (`checks.topology.facts.nics`); a name used otherwise (`checks[k]`) is read whole. A walk
    of the tree, no recursion."""
    loops, reads = 0, set[Path]()
    pending = [tree]
    while pending:
        node = pending.pop()
        fields: list[str] = []  # the selections followed down from `node`, outermost first
        while isinstance(node, Select):
            fields.append(node.field)
            node = node.operand
        if isinstance(node, Name):  # `.a` is `a`, from the root of the namespace
            reads.add((node.name.lstrip("."), *reversed(fields)))
            continue
        if isinstance(node, Loop):
            loops += 1
            pending += [node.over] if node.mapped is None else [node.over, node.mapped]
        elif isinstance(node, Index):
            pending += [node.operand, node.key]
        pending.extend(node.parts)
    return Shape(loops if comprehensions is None else comprehensions, frozenset(reads))
