"""The cel-expr-python engine: Google's CEL runtime (cel-cpp) for Python.

About ten times faster than celpy to compile and evaluate the shipped rules, and it imports
in ~10 ms where celpy builds its lark grammar on every run. Wheels exist for CPython >= 3.11
only; `cel.py` falls back to celpy where it is missing.

Its runtime bounds every evaluation itself (`budget.MAX_ITERATIONS` comprehension steps,
reported as "Iteration budget exceeded"); between evaluations `evaluate.py` looks at the
run's deadline. Expressions are compiled without the type checker (every variable is
`dyn`), so a wrong name or type is an evaluation error, as it is in celpy. A scope's
values are converted to CEL when an expression first reads them and kept for the scope's
other expressions (cel-expr-python's `Activation`), so a GPU's scope converts only what its
rules read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .budget import BudgetExceeded, exhausted
from .errors import CompileFailure, EvalFailure
from .model import Path, Shape

VARIABLES = ("checks", "findings", "profile", "params", "node", "gpu")
_BUDGET_WORDS = "Iteration budget exceeded"


class GoogleEngine:
    name = "cel-expr-python"

    def __init__(self) -> None:
        from cel_expr_python import cel  # type: ignore[import-untyped,import-not-found,unused-ignore]

        self._cel = cel
        self._env = cel.NewEnv(variables={name: cel.Type.DYN for name in VARIABLES})
        self._error_type = cel.Type.ERROR

    def compile(self, text: str) -> tuple[Any, Shape]:
        """(program, the shape of its syntax tree); CompileFailure with the line."""
        try:
            program = self._env.compile(text, disable_check=True)
        except Exception as exc:  # the runtime raises its parser's status as a plain error
            message, offset = _parse_message(str(exc))
            raise CompileFailure(message, offset) from exc
        return program, shape(program.serialize())

    # A scope's values are converted when first read and kept for its other expressions, a
    # whole variable at a time: a GPU's scope cannot share the node's converted values, so
    # it is given only what GPU rules read (`reads.prune`), not every check's facts again
    # (~30 ms and 10 MB a GPU at 64 GPUs).
    shares_scopes = False

    def activation(self, values: dict[str, Any], base: Any | None = None) -> Any:
        return self._env.Activation(values)

    def evaluate(self, program: Any, activation: Any, deadline: float | None) -> Any:
        """The plain value; EvalFailure for a CEL error; BudgetExceeded when it runs out (the
        runtime's own step budget: `deadline` is for the caller, between evaluations)."""
        try:
            result = program.eval(activation)
        except RuntimeError as exc:
            if _BUDGET_WORDS in str(exc):
                raise BudgetExceeded(exhausted()) from exc
            raise EvalFailure(str(exc)) from exc
        if result.type() == self._error_type:
            raise EvalFailure(str(result.value()))
        return result.plain_value()


def _parse_message(text: str) -> tuple[str, int]:
    """The runtime's parse error ("ERROR: <input>:2:5: Syntax error: ...") as its first
    message and the line offset within the expression."""
    for line in text.splitlines():
        line = line.strip()
        where = line.find("ERROR: <input>:")
        if where >= 0:
            place, _, message = line[where + len("ERROR: <input>:") :].partition(": ")
            row = place.split(":", 1)[0]
            message = message.removesuffix(" [INVALID_ARGUMENT]") or line
            return message, int(row) - 1 if row.isdigit() else 0
    return (text.strip().splitlines() or ["syntax error"])[0], 0


# The serialized program is a `google.protobuf.Any` holding a `cel.expr.ParsedExpr` (unchecked,
# as compiled here) or `cel.expr.CheckedExpr` (cel-spec's syntax.proto / checked.proto): the
# syntax tree is read from its wire form. The field of the tree in each, then Expr's fields
# that hold sub-expressions, by the Expr field of the node kind:
_ANY_TYPE, _ANY_VALUE = 1, 2
_IDENT = 4
_TREE_FIELD = {b"cel.expr.ParsedExpr": 2, b"cel.expr.CheckedExpr": 4}
_SELECT, _CALL, _LIST, _STRUCT, _COMPREHENSION = 5, 6, 7, 8, 9
_CHILDREN = {
    _SELECT: (1,),  # operand
    _CALL: (1, 3),  # target, args
    _LIST: (1,),  # elements
    _COMPREHENSION: (2, 4, 5, 6, 7),  # iter_range, accu_init, loop_condition, step, result
}
_STRUCT_ENTRIES, _ENTRY_CHILDREN = 2, (3, 4)  # entries; an entry's map_key, value


def shape(serialized: bytes) -> Shape:
    """What a serialized program's syntax tree does: its comprehension nodes (every macro:
    all, exists, exists_one, map, filter) and the paths it reads (each chain of field
    selections from a name: `checks.topology.facts.nics`; a name used otherwise, such as
    `checks[k]`, is read whole). Each node's bytes are read once (a walk of the tree, no
    recursion: a chain of selections is followed down, the rest kept on a stack)."""
    envelope = dict(_fields(serialized))
    message = envelope.get(_ANY_TYPE, b"").rpartition(b"/")[2]
    if message not in _TREE_FIELD:
        raise ValueError(f"unexpected serialized CEL program {message!r}")
    tree = _TREE_FIELD[message]
    pending = [v for f, v in _fields(envelope.get(_ANY_VALUE, b"")) if f == tree]
    count = 0
    reads: set[Path] = set()
    while pending:
        expr = pending.pop()
        names: list[bytes] = []  # the selections followed down from `expr`, outermost first
        while True:
            kind, node = _kind(expr)
            if kind == _IDENT:  # `expr` is a chain from a name (`.a`: from the root)
                name = _last(node, 1).decode().lstrip(".")
                reads.add((name, *(n.decode() for n in reversed(names))))
                break
            if kind == _SELECT:
                operand = _last(node, 1, None)
                if operand is None:
                    break
                names.append(_last(node, 2))
                expr = operand
                continue
            # not a chain: whatever `expr` (the innermost node reached) holds is read
            if kind == _COMPREHENSION:
                count += 1
            if kind in _CHILDREN:
                wanted = _CHILDREN[kind]
                pending.extend(v for f, v in _fields(node) if f in wanted)
            elif kind == _STRUCT:
                for field, entry in _fields(node):
                    if field == _STRUCT_ENTRIES:
                        pending.extend(v for f, v in _fields(entry) if f in _ENTRY_CHILDREN)
            break
    return Shape(count, frozenset(reads))


def _kind(expr: bytes) -> tuple[int, bytes]:
    """An Expr's node: (its field number, its bytes), the last one where there are several;
    (0, b"") for none (a constant)."""
    found = (0, b"")
    for field, value in _fields(expr):
        if field > 2:  # 1 is the id; 3 a constant, 4-9 the node kinds
            found = (field, value)
    return found


def _last(data: bytes, number: int, default: Any = b"") -> Any:
    value = default
    for field, item in _fields(data):
        if field == number:
            value = item
    return value


def _fields(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The length-delimited fields of one protobuf message: (field number, bytes)."""
    position, end = 0, len(data)
    while position < end:
        key = data[position]
        position += 1
        if key >= 0x80:
            key, position = _varint(data, position - 1)
        field, wire = key >> 3, key & 7
        if wire == 2:
            size = data[position]
            position += 1
            if size >= 0x80:
                size, position = _varint(data, position - 1)
            yield field, data[position : position + size]
            position += size
        elif wire == 0:
            _, position = _varint(data, position)
        elif wire == 1:
            position += 8
        elif wire == 5:
            position += 4
        else:
            raise ValueError(f"unexpected protobuf wire type {wire}")


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
