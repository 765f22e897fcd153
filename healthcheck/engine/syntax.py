"""An expression's syntax: what `rules validate` walks and what bounds and scopes a program.

One small parser of CEL's grammar (cel-spec's langdef.md) reads the text of an expression
that its engine compiled into a few nodes: names, field selections, indexes, literals that
can index, comprehension macros, and computed values. Both engines' programs are read the
same way, so `rules validate` needs no engine of its own (the runtime dependencies alone,
on every Python) and a comment cannot hide a macro. `at` is where a node is in the text (a
character offset), for the line a problem is reported on. `shape_of` gives a program's
comprehensions and the paths it reads.
"""

from __future__ import annotations

import re
from typing import NoReturn

from msgspec import Struct

from .errors import CompileFailure
from .model import Path, Shape

# The macros that visit a list's items (or a map's keys) with a variable.
COMPREHENSIONS = frozenset({"all", "exists", "exists_one", "filter", "map"})
# Brackets nested deeper are refused, as Google's parser refuses them (celpy evaluates a
# little deeper, then runs out of Python's recursion on every evaluation of the rule).
MAX_NESTING = 32
_TOKEN = re.compile(
    r"""(?P<space>\s+|//[^\n]*)
    |(?P<string>[rRbB]{0,2}(?:\"\"\"(?:\\[\s\S]|[^\\])*?\"\"\"|'''(?:\\[\s\S]|[^\\])*?'''
      |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
    |(?P<number>0[xX][0-9a-fA-F]+[uU]?|\d*\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?)
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<operator>\|\||&&|[<>=!]=|[-+*/%<>!?:.,()\[\]{}])
    |(?P<other>.)""",
    re.VERBOSE,
)
# Binary operators and how tightly each binds (`in` is a name token).
_BINDING = {"||": 1, "&&": 2, "+": 4, "-": 4, "*": 5, "/": 5, "%": 5}
_BINDING.update(dict.fromkeys(("<", "<=", ">=", ">", "==", "!=", "in"), 3))


class Node(Struct, frozen=True):
    """A part of an expression whose value is computed (an operator, a function, a list or map
    built in the expression, a literal): only its `parts` are read. `at`: where a read is in
    the text (a name's, a selected field's, an index's key, a macro's name)."""

    parts: tuple[Node, ...] = ()
    at: int = 0


class Name(Node, frozen=True):
    """A name: a variable of the scope, a comprehension's variable or a CEL type name (`int`);
    written `.name`, from the root of the namespace."""

    name: str = ""


class Select(Node, frozen=True):
    """`operand.field` (and `has(operand.field)`)."""

    operand: Node = Node()
    field: str = ""


class Constant(Node, frozen=True):
    """A literal; `value` where it is a string (no escapes) or an integer (what can index)."""

    value: str | int | None = None


class Index(Node, frozen=True):
    """`operand[key]`."""

    operand: Node = Node()
    key: Node = Node()


class Loop(Node, frozen=True):
    """A comprehension macro: `over.<macro>(var, ...)`. `parts` are read with `var` bound to
    an item of `over`; `mapped`: what `map` makes each item into."""

    macro: str = ""
    var: str = ""
    over: Node = Node()
    mapped: Node | None = None


def parse(text: str) -> Node:
    """The syntax of `text`; CompileFailure (with the line) where it is not CEL or nests
    brackets deeper than MAX_NESTING."""
    return _Parser(text).whole()


class _Parser:
    """Recursive descent over cel-spec's grammar, one method a production."""

    def __init__(self, text: str) -> None:
        self._text = text
        found = [(m.lastgroup or "", m.group(), m.start()) for m in _TOKEN.finditer(text)]
        self._tokens = [token for token in found if token[0] != "space"]
        self._tokens.append(("end", "", len(text)))
        self._next, self._depth = 0, -1  # brackets around the expression now

    def whole(self) -> Node:
        tree = self._expr()
        self._expect("")
        return tree

    def _peek(self) -> str:
        kind, word, _ = self._tokens[self._next]
        return word if kind in ("operator", "name") else f"<{kind}>"

    def _take(self, word: str) -> bool:
        if self._peek() != word:
            return False
        self._next += 1
        return True

    def _expect(self, word: str) -> None:
        if not self._take(word or "<end>"):
            self._fail(f"expected {word or 'the end'}")

    def _fail(self, problem: str) -> NoReturn:
        _, word, at = self._tokens[self._next]
        found = repr(word) if word else "the end"
        raise CompileFailure(f"{problem}, found {found}", self._text.count("\n", 0, at))

    def _expr(self) -> Node:  # Expr = ConditionalOr ["?" ConditionalOr ":" Expr]
        self._depth += 1
        if self._depth > MAX_NESTING:
            self._fail(f"nested deeper than {MAX_NESTING} levels")
        tree = self._binary()
        if self._take("?"):
            chosen = self._binary()
            self._expect(":")
            tree = Node((tree, chosen, self._expr()))
        self._depth -= 1
        return tree

    def _binary(self, floor: int = 1) -> Node:  # operators binding at least `floor`
        tree = self._unary()
        while _BINDING.get(self._peek(), 0) >= floor:
            binding = _BINDING[self._peek()]
            self._next += 1
            tree = Node((tree, self._binary(binding + 1)))
        return tree

    def _unary(self) -> Node:  # Unary = Member | "!" {"!"} Member | "-" {"-"} Member
        signs = []
        while self._peek() in ("!", "-"):
            signs.append(self._peek())
            self._next += 1
        tree = self._member()
        if signs == ["-"] and isinstance(tree, Constant) and isinstance(tree.value, int):
            return Constant(value=-tree.value)  # `-1`: one literal, as Google's parser has it
        return Node((tree,)) if signs else tree

    def _member(self) -> Node:  # Member = Primary | Member "." SELECTOR ["(" args ")"] | ...
        tree = self._primary()
        while True:
            if self._take("."):
                field, at = self._name()
                if self._take("("):
                    tree = _call(tree, field, at, self._list(")"))
                else:
                    tree = Select(operand=tree, field=field, at=at)
            elif self._take("["):
                at = self._tokens[self._next][2]
                tree = Index(operand=tree, key=self._expr(), at=at)
                self._expect("]")
            elif self._take("{"):  # a message, `pkg.Name{field: value}`: its values
                tree = Node(tuple(self._list("}")[1::2]))
            else:
                return tree

    def _primary(self) -> Node:
        kind, word, at = self._tokens[self._next]
        self._next += 1
        if word == "." and kind == "operator":  # `.name`: from the root of the namespace
            name, at = self._name()
            word, kind = f".{name}", "name"
        if kind == "name" and word not in ("true", "false", "null"):
            if self._take("("):  # `f(args)`, `has(x.y)`
                return Node(tuple(self._list(")")))
            return Name(name=word, at=at)
        if kind == "operator" and word in "([{":
            if word == "(":
                tree = self._expr()
                self._expect(")")
                return tree
            return Node(tuple(self._list("]" if word == "[" else "}")))
        if kind in ("string", "number") or word in ("true", "false", "null"):
            return Constant(value=_value(kind, word))
        self._next -= 1
        self._fail("expected a value")

    def _name(self) -> tuple[str, int]:
        kind, word, at = self._tokens[self._next]
        if kind != "name":
            self._fail("expected a name")
        self._next += 1
        return word, at

    def _list(self, close: str) -> list[Node]:
        """Expressions parted by commas (one may end the list) up to `close`; before `}`,
        `key: value` entries (both kept)."""
        items: list[Node] = []
        while not self._take(close):
            items.append(self._expr())
            if close == "}" and self._take(":"):
                items.append(self._expr())
            if not self._take(","):
                self._expect(close)
                break
        return items


def _call(over: Node, method: str, at: int, arguments: list[Node]) -> Node:
    """`over.method(arguments)`: a comprehension where it is a macro's call (`map` has an
    optional filter before what it maps to)."""
    arity = (2, 3) if method == "map" else (2,)
    variable = arguments[0] if arguments else None
    if method in COMPREHENSIONS and isinstance(variable, Name) and len(arguments) in arity:
        mapped = arguments.pop() if method == "map" else None
        return Loop(tuple(arguments[1:]), at, method, variable.name, over, mapped)
    return Node((over, *arguments))


def _value(kind: str, word: str) -> str | int | None:
    """A literal's value where it can index: an integer, a string without escapes."""
    if kind == "number":
        hexadecimal = word[:2] in ("0x", "0X")
        if word[-1] in "uU" or (not hexadecimal and any(c in word for c in ".eE")):
            return None  # an unsigned integer or a double
        return int(word, 16 if hexadecimal else 10)
    prefix = word[: len(word) - len(word.lstrip("rRbB"))]
    quotes = 3 if word[len(prefix) :].startswith(('"""', "'''")) else 1
    body = word[len(prefix) + quotes : -quotes]
    return body if kind == "string" and "b" not in prefix.lower() and "\\" not in body else None


def shape_of(tree: Node) -> Shape:
    """What an expression does: its comprehensions (the `Loop`s) and the paths it reads: each
    chain of field selections from a name (`checks.topology.facts.nics`); a name used
    otherwise (`checks[k]`) is read whole. A walk of the tree, no recursion."""
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
    return Shape(loops, frozenset(reads))
