"""Check rule files against the declared facts: every fact path a rule reads, every `requires`.

Each CEL expression of a rule (`when`, `guard`, the message's `{...}`) is parsed with celpy
and its tree walked with the activation's schema (`fact_schema.activation`) beside it: a
field read (`gpu.nvlink.links_reported`, `checks.topology.facts.pairs`), an index
(`x["key"]`, `x[0]`), `has(...)` and the comprehension variables (`pairs.exists(p,
p.on_nvlink)` reads `p` as an item of `pairs`; `.filter()` keeps the list, `.map()` makes a
list of its values) follow the schema; a path the schema does not have is a problem on the
expression's line. What a value computed by an operator or a function holds is not followed.
Every name in `requires` must be a check that exists, or `profile`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from msgspec import Struct

from ..errors import RuleError
from .evaluate import PROFILE_REQUIREMENT
from .fact_schema import ANYTHING, Activation, Shape
from .model import Rule
from .yaml_lines import LinedDict, LinedList, line_of, load_yaml, read_capped, value_line_of

COMPREHENSIONS = frozenset({"all", "exists", "exists_one", "filter", "map"})
# The parse-tree nodes (celpy's cel.lark) read by their own method; the others pass through.
_HANDLED = frozenset(
    {
        "ident", "member_dot", "member_index", "member_dot_arg", "member_object", "ident_arg",
        "dot_ident", "dot_ident_arg", "paren_expr", "literal", "list_lit", "map_lit",
    }
)  # fmt: skip
# Names CEL itself defines (type names: `type(x) == bool`).
CEL_NAMES = frozenset(
    {"bool", "bytes", "double", "int", "list", "map", "null_type", "string", "type", "uint"}
)


class Read(Struct, frozen=True):
    """A value an expression reads: where in the schema it is, and its path as written."""

    shape: Shape
    text: str


class Problem(Struct, frozen=True):
    """A read the declared facts do not allow: where in the expression, and what is wrong."""

    line: int  # where in the expression, from 1
    column: int
    message: str


def rule_file_problems(path: Path, rules: Sequence[Rule], schema: Activation) -> list[RuleError]:
    """The fact paths and `requires` names of `rules` (`loader.load_rules([path])`, so every
    expression already compiles) that the declarations do not have, with their lines."""
    data = load_yaml(path)
    entries = data.get("rules") if isinstance(data, LinedDict) else None
    by_id = {
        entry.get("id"): entry
        for entry in (entries if isinstance(entries, LinedList) else [])
        if isinstance(entry, LinedDict)
    }
    lines = read_capped(path).decode("utf-8", errors="replace").splitlines()
    parser = _parser()
    out: list[RuleError] = []
    for rule in rules:
        entry = by_id.get(rule.id)
        if entry is not None:
            out.extend(_rule_problems(str(path), lines, rule, entry, schema, parser))
    return out


def _rule_problems(
    file: str, lines: list[str], rule: Rule, entry: LinedDict, schema: Activation, parser: Any
) -> list[RuleError]:
    out: list[RuleError] = []
    requires = entry.get("requires")
    for position, name in enumerate(rule.requires):
        if name != PROFILE_REQUIREMENT and name not in schema.checks:
            known = ", ".join([*sorted(schema.checks), PROFILE_REQUIREMENT])
            line = line_of(requires, position, line_of(entry, "requires"))
            message = f"rule {rule.id}: requires {name!r}: no such check (known: {known})"
            out.append(RuleError(file, message, line))
    # (key, the expression, the text it sits in, where in that text it starts)
    expressions = [("when", rule.when.text, rule.when.text, 0)]
    if rule.guard is not None:
        expressions.append(("guard", rule.guard.text, rule.guard.text, 0))
    template, start = rule.message, 0
    for placeholder in rule.placeholders:
        start = max(template.find(placeholder.text, start), 0)
        expressions.append(("message", placeholder.text, template, start))
    names = schema.names(rule.scope)
    seen: set[tuple[int, str]] = set()
    for key, text, whole, offset in expressions:
        first = value_line_of(entry, key)
        for problem in expression_problems(parser.compile(text), names):
            at = offset + _offset(text, problem.line, problem.column)
            where = source_line(lines, first, whole, at)
            message = f"rule {rule.id}: {key}: {problem.message}"
            if (where, message) not in seen:  # a path read twice on a line is one problem
                seen.add((where, message))
                out.append(RuleError(file, message, where))
    return out


def _offset(text: str, line: int, column: int) -> int:
    """The character offset of a (line, column) position (both from 1) in `text`."""
    rows = text.split("\n")
    return sum(len(row) + 1 for row in rows[: line - 1]) + max(column - 1, 0)


def source_line(lines: Sequence[str], first: int, text: str, offset: int) -> int:
    """The file line holding character `offset` of a YAML scalar's `text` that starts on line
    `first`: the scalar's lines are found in the text in order (a folded block joins them,
    a quoted or plain one may start after its key); `first` where they cannot be followed."""
    position = 0
    for number in range(first, min(first + 500, len(lines) + 1)):
        content = lines[number - 1].strip()
        if not content:
            continue
        found = text.find(content, position)
        if found < 0 and number == first:  # `key: value` on one line, or a quote before it
            content = content.partition(": ")[2].lstrip("\"'") or content
            found = text.find(content, position)
        if found < 0:
            break
        if offset < found + len(content):
            return number
        position = found + len(content)
    return first


def _parser() -> Any:
    import celpy

    return celpy.Environment()


def expression_problems(tree: Any, names: Mapping[str, Shape]) -> list[Problem]:
    """The fact paths a parsed expression reads that `names` (the top-level names and their
    shapes) do not have, in the order written."""
    walker = _Walker()
    walker.read(tree, dict(names))
    return walker.problems


class _Walker:
    """Reads a celpy parse tree (lark) for the shape each member chain lands on."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def read(self, tree: Any, scope: dict[str, Shape]) -> Read | None:
        """The shape `tree`'s value has, where it is a chain of reads; None where it is
        computed (its parts are still read)."""
        from lark import Token, Tree

        if isinstance(tree, Token) or not isinstance(tree, Tree):
            return None
        kind = str(tree.data)
        children = tree.children
        handler = getattr(self, f"_{kind}", None) if kind in _HANDLED else None
        if handler is not None:
            result: Read | None = handler(children, scope, tree)
            return result
        if len(children) == 1:  # expr, conditionalor, ..., unary, member, primary: one part
            return self.read(children[0], scope)
        for child in children:
            self.read(child, scope)
        return None

    def _found(self, base: Read, step: Shape | str, text: str, token: Any) -> Read | None:
        if isinstance(step, str):
            self._problem(token, f"{text}: {base.text} {step}")
            return None
        return Read(step, text)

    def _problem(self, token: Any, message: str) -> None:
        line, column = getattr(token, "line", None) or 1, getattr(token, "column", None) or 1
        self.problems.append(Problem(line, column, message))

    # --- names and reads ----------------------------------------------------------------------

    def _ident(self, children: list[Any], scope: dict[str, Shape], tree: Any) -> Read | None:
        token = children[0]
        name = str(token)
        if name in scope:
            return Read(scope[name], name)
        if name not in CEL_NAMES:
            self._problem(token, f"{name}: no such name here (known: {', '.join(sorted(scope))})")
        return None

    def _member_dot(self, children: list[Any], scope: dict[str, Shape], tree: Any) -> Read | None:
        base = self.read(children[0], scope)
        name = str(children[1])
        if base is None:
            return None
        return self._found(base, base.shape.member(name), f"{base.text}.{name}", children[1])

    def _member_index(self, children: list[Any], scope: dict[str, Shape], tree: Any) -> Read | None:
        base = self.read(children[0], scope)
        self.read(children[1], scope)
        if base is None:
            return None
        key = _literal(children[1])
        shown = repr(key) if key is not None else "..."
        return self._found(base, base.shape.index(key), f"{base.text}[{shown}]", _first_token(tree))

    def _member_dot_arg(
        self, children: list[Any], scope: dict[str, Shape], tree: Any
    ) -> Read | None:
        base = self.read(children[0], scope)
        method = str(children[1])
        arguments = _arguments(children[2] if len(children) > 2 else None)
        variable = _bare_name(arguments[0]) if arguments else None
        if method not in COMPREHENSIONS or variable is None or len(arguments) < 2:
            for argument in arguments:
                self.read(argument, scope)
            return None
        item = Shape(ANYTHING, {})
        if base is not None:
            step = base.shape.items()
            if isinstance(step, str):
                self._problem(children[1], f"{base.text}.{method}(): {base.text} {step}")
            else:
                item = step
        values = [self.read(argument, {**scope, variable: item}) for argument in arguments[1:]]
        if base is None:
            return None
        if method == "filter":
            return Read(base.shape, f"{base.text}.filter()")
        if method == "map":
            last = values[-1]
            shape = last.shape if last is not None else Shape(ANYTHING, {})
            return Read(shape.listing(), f"{base.text}.map()")
        return None

    def _member_object(
        self, children: list[Any], scope: dict[str, Shape], tree: Any
    ) -> Read | None:
        for child in children[1:]:
            self.read(child, scope)
        return None

    def _ident_arg(self, children: list[Any], scope: dict[str, Shape], tree: Any) -> Read | None:
        for argument in _arguments(children[1] if len(children) > 1 else None):
            self.read(argument, scope)
        return None

    def _list_lit(self, children: list[Any], scope: dict[str, Shape], tree: Any) -> Read | None:
        for child in children:  # `[a]` is a list, never `a` itself
            self._read_all(child, scope)
        return None

    _map_lit = _list_lit

    def _read_all(self, tree: Any, scope: dict[str, Shape]) -> None:
        from lark import Tree

        if isinstance(tree, Tree) and str(tree.data) in ("exprlist", "mapinits", "fieldinits"):
            for child in tree.children:
                self.read(child, scope)
        else:
            self.read(tree, scope)

    def _paren_expr(self, children: list[Any], scope: dict[str, Shape], tree: Any) -> Read | None:
        return self.read(children[0], scope)

    def _literal(self, children: list[Any], scope: dict[str, Shape], tree: Any) -> Read | None:
        return None

    def _dot_ident(self, children: list[Any], scope: dict[str, Shape], tree: Any) -> Read | None:
        return None  # a name from the root of the namespace (`.name`): not the activation's

    _dot_ident_arg = _ident_arg  # `.name(args)`: its arguments are read


def _arguments(exprlist: Any) -> list[Any]:
    from lark import Tree

    if isinstance(exprlist, Tree) and str(exprlist.data) == "exprlist":
        return list(exprlist.children)
    return []


def _chain(tree: Any) -> Any:
    """The innermost tree of a chain of one-child trees."""
    from lark import Tree

    while isinstance(tree, Tree) and len(tree.children) == 1 and isinstance(tree.children[0], Tree):
        tree = tree.children[0]
    return tree


def _bare_name(tree: Any) -> str | None:
    """The name an argument is, where it is just a name (a comprehension's variable)."""
    inner = _chain(tree)
    if str(getattr(inner, "data", "")) == "ident":
        return str(inner.children[0])
    return None


def _literal(tree: Any) -> object:
    """A string or integer literal's value; None for anything else."""
    inner = _chain(tree)
    if str(getattr(inner, "data", "")) != "literal" or not inner.children:
        return None
    token = inner.children[0]
    text = str(token)
    if token.type == "INT_LIT":
        try:
            return int(text, 0)
        except ValueError:
            return None
    if token.type == "STRING_LIT" and len(text) >= 2 and text[0] == text[-1] and "\\" not in text:
        return text[1:-1]
    return None


def _first_token(tree: Any) -> Any:
    from lark import Token

    for token in tree.scan_values(lambda v: isinstance(v, Token)):
        return token
    return None


def summary_of(schema: Activation) -> Sequence[str]:
    """Notes for the validation's summary: what could not be checked."""
    if not schema.unmodelled:
        return []
    return [f"facts of {', '.join(schema.unmodelled)} not checked (no facts model declared)"]
