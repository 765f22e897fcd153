"""Check rule files against the declared facts: every fact path a rule reads, every `requires`.

Each CEL expression of a rule (`when`, `guard`, the message's `{...}`) is parsed into
`syntax` nodes (`syntax.parse`, whichever engine is installed) and walked with the
activation's schema (`fact_schema.activation`) beside it: a field read
(`gpu.nvlink.links_reported`, `checks.topology.facts.pairs`), an index (`x["key"]`, `x[0]`),
`has(...)` and the comprehension variables (`pairs.exists(p, p.on_nvlink)` reads `p` as an
item of `pairs`; `.filter()` keeps the list, `.map()` makes a list of its values) follow the
schema; a path the schema does not have is a problem on the expression's line. What a value
computed by an operator or a function holds is not followed.
Every name in `requires` must be a check that exists, or `profile`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from msgspec import Struct

from ..errors import RuleError
from .evaluate import PROFILE_REQUIREMENT
from .fact_schema import ANYTHING, Activation, Shape
from .model import Rule
from .syntax import Constant, Index, Loop, Name, Node, Select, parse
from .yaml_lines import LinedDict, LinedList, line_of, parse_lined, read_capped, value_line_of

# Names CEL itself defines (type names: `type(x) == bool`).
CEL_NAMES = frozenset(
    {"bool", "bytes", "double", "int", "list", "map", "null_type", "string", "type", "uint"}
)


class Read(Struct, frozen=True):
    """A value an expression reads: where in the schema it is, and its path as written."""

    shape: Shape
    text: str


class Problem(Struct, frozen=True):
    """A read the declared facts do not allow: where in the expression (a character offset),
    and what is wrong."""

    at: int
    message: str


def rule_file_problems(path: Path, rules: Sequence[Rule], schema: Activation) -> list[RuleError]:
    """The fact paths and `requires` names of `rules` (`loader.load_rules([path])`, so every
    expression already compiles) that the declarations do not have, with their lines."""
    text = read_capped(path).decode("utf-8", errors="replace")
    data = parse_lined(path, text)
    entries = data.get("rules") if isinstance(data, LinedDict) else None
    by_id = {
        entry.get("id"): entry
        for entry in (entries if isinstance(entries, LinedList) else [])
        if isinstance(entry, LinedDict)
    }
    lines = text.splitlines()
    out: list[RuleError] = []
    for rule in rules:
        entry = by_id.get(rule.id)
        if entry is not None:
            out.extend(_rule_problems(str(path), lines, rule, entry, schema))
    return out


def _rule_problems(
    file: str, lines: list[str], rule: Rule, entry: LinedDict, schema: Activation
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
        for problem in expression_problems(parse(text), names):
            where = source_line(lines, first, whole, offset + problem.at)
            message = f"rule {rule.id}: {key}: {problem.message}"
            if (where, message) not in seen:  # a path read twice on a line is one problem
                seen.add((where, message))
                out.append(RuleError(file, message, where))
    return out


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


def expression_problems(tree: Node, names: Mapping[str, Shape]) -> list[Problem]:
    """The fact paths an expression's syntax (`syntax.parse`) reads that `names`
    (the top-level names and their shapes) do not have, in the order written."""
    walker = _Walker()
    walker.read(tree, dict(names))
    return walker.problems


class _Walker:
    """Reads a syntax tree for the shape each chain of reads lands on."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def read(self, node: Node, scope: dict[str, Shape | None]) -> Read | None:
        """The shape `node`'s value has, where it is a chain of reads; None where it is
        computed (its parts are still read). A name bound to None is a computed value."""
        if isinstance(node, Name):
            return self._name(node, scope)
        if isinstance(node, Select):
            base = self.read(node.operand, scope)
            if base is None:
                return None
            text = f"{base.text}.{node.field}"
            return self._found(base, base.shape.member(node.field), text, node.at)
        if isinstance(node, Index):
            base = self.read(node.operand, scope)
            self.read(node.key, scope)
            if base is None:
                return None
            key = node.key.value if isinstance(node.key, Constant) else None
            text = f"{base.text}[{'...' if key is None else repr(key)}]"
            return self._found(base, base.shape.index(key), text, node.at)
        if isinstance(node, Loop):
            return self._loop(node, scope)
        for part in node.parts:
            self.read(part, scope)
        return None

    def _name(self, node: Name, scope: dict[str, Shape | None]) -> Read | None:
        if node.name in scope:
            shape = scope[node.name]
            return None if shape is None else Read(shape, node.name)
        if node.name not in CEL_NAMES and not node.name.startswith("."):  # `.a`: the root's
            known = ", ".join(sorted(name for name, shape in scope.items() if shape is not None))
            message = f"{node.name}: no such name here (known: {known})"
            self.problems.append(Problem(node.at, message))
        return None

    def _loop(self, node: Loop, scope: dict[str, Shape | None]) -> Read | None:
        base = self.read(node.over, scope)
        item = Shape(ANYTHING, {})
        if base is not None:
            step = base.shape.items()
            if isinstance(step, str):
                message = f"{base.text}.{node.macro}(): {base.text} {step}"
                self.problems.append(Problem(node.at, message))
            else:
                item = step
        inner: dict[str, Shape | None] = {**scope, node.var: item}
        for part in node.parts:
            self.read(part, inner)
        mapped = self.read(node.mapped, inner) if node.mapped is not None else None
        if base is None:
            return None
        if node.macro == "filter":
            return Read(base.shape, f"{base.text}.filter()")
        if node.macro == "map":
            shape = mapped.shape if mapped is not None else Shape(ANYTHING, {})
            return Read(shape.listing(), f"{base.text}.map()")
        return None

    def _found(self, base: Read, step: Shape | str, text: str, at: int) -> Read | None:
        if isinstance(step, str):
            self.problems.append(Problem(at, f"{text}: {base.text} {step}"))
            return None
        return Read(step, text)
