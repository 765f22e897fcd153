"""An expression's syntax as `rules validate` reads it, the same nodes from either CEL engine.

Each engine parses with its own parser and turns its own tree into these few nodes
(`GoogleEngine.syntax`: cel-expr-python's serialized `cel.expr.ParsedExpr`, whose macros are
expanded into comprehensions; `CelpyEngine.syntax`: celpy's lark parse tree), so validation
needs only the engine a run uses (issue 29 item 10: the runtime dependencies alone). The
fact-path check (`fact_paths`) walks them. `at` is where the node is in the expression's
text (a character offset), for the line a problem is reported on.
"""

from __future__ import annotations

from msgspec import Struct

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
