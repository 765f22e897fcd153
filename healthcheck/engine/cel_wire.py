"""Reading cel-expr-python's serialized programs: the syntax tree, from its protobuf wire form.

A compiled program serializes (`Expression.serialize`, the runtime's public API) as a
`google.protobuf.Any` holding a `cel.expr.ParsedExpr` (unchecked, as `cel_google` compiles)
or a `cel.expr.CheckedExpr` (cel-spec's syntax.proto / checked.proto), read here by field
number with no protobuf classes: `shape`, what every compiled expression is bounded and
scoped by; `syntax`, the tree `rules validate` checks the fact paths of (`syntax.py`), with
where each node is in the text (the source info's positions).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .model import Path, Shape
from .syntax import Constant, Index, Loop, Name, Node, Select

# The Any's fields; the field of the tree and of its source info in each message; then
# Expr's fields: its id, and those that hold sub-expressions, by the field of the node kind:
_ANY_TYPE, _ANY_VALUE = 1, 2
_TREE_FIELD = {b"cel.expr.ParsedExpr": 2, b"cel.expr.CheckedExpr": 4}
_SOURCE_INFO_FIELD = {b"cel.expr.ParsedExpr": 3, b"cel.expr.CheckedExpr": 5}
_ID = 2
_CONSTANT, _IDENT, _SELECT, _CALL, _LIST, _STRUCT, _COMPREHENSION = 3, 4, 5, 6, 7, 8, 9
_CHILDREN = {
    _SELECT: (1,),  # operand
    _CALL: (1, 3),  # target, args
    _LIST: (1,),  # elements
    _COMPREHENSION: (2, 4, 5, 6, 7),  # iter_range, accu_init, loop_condition, step, result
}
_STRUCT_ENTRIES, _ENTRY_CHILDREN = 2, (3, 4)  # entries; an entry's map_key, value
# A comprehension's fields: its variable, range, accumulator, the accumulator's start, the
# loop's condition, its step and result.
_ITER_VAR, _ITER_RANGE, _ACCU_VAR, _ACCU_INIT, _CONDITION, _STEP, _RESULT = range(1, 8)
_INT64, _STRING = 3, 6  # Constant's fields that can index
_POSITIONS = 4  # SourceInfo's map of an Expr's id to its offset in the text


def shape(serialized: bytes) -> Shape:
    """What a serialized program's syntax tree does: its comprehension nodes (every macro:
    all, exists, exists_one, map, filter) and the paths it reads (each chain of field
    selections from a name: `checks.topology.facts.nics`; a name used otherwise, such as
    `checks[k]`, is read whole). Each node's bytes are read once (a walk of the tree, no
    recursion: a chain of selections is followed down, the rest kept on a stack)."""
    message, body = _message(serialized)
    tree = _TREE_FIELD[message]
    pending = [v for f, v in _fields(body) if f == tree]
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
                pending.extend(_children(kind, node))
            break
    return Shape(count, frozenset(reads))


def syntax(serialized: bytes, text: str) -> Node:
    """The syntax (`syntax.py`) of a serialized program compiled from `text`. The runtime
    expands each macro into a comprehension: the macro's name is read back from the text
    before it, and a `map` or `filter` is told by what its step appends."""
    message, body = _message(serialized)
    places: dict[int, int] = {}
    for field, entry in _fields(_last(body, _SOURCE_INFO_FIELD[message])):
        if field == _POSITIONS:
            pair = dict(_fields(entry))
            places[pair.get(1, 0)] = pair.get(2, 0)
    return _Syntax(places, text).node(_last(body, _TREE_FIELD[message]))


class _Syntax:
    """Builds the nodes of one program's tree; `places`: each Expr id's offset in `text`."""

    def __init__(self, places: dict[int, int], text: str) -> None:
        self._places, self._text = places, text

    def node(self, expr: bytes) -> Node:
        kind, body = _kind(expr)
        at = self._places.get(_last(expr, _ID, 0), 0)
        if kind == _IDENT:
            return Name(name=_last(body, 1).decode(), at=at)
        if kind == _SELECT:  # at its `.` (a `has()`'s at its `(`)
            operand = self.node(_last(body, 1))
            return Select(operand=operand, field=_last(body, 2).decode(), at=self._next(at))
        if kind == _CALL:
            parts = tuple(self.node(v) for f, v in _fields(body) if f in _CHILDREN[_CALL])
            if _last(body, 2) == b"_[_]" and len(parts) == 2:  # at its `[`
                return Index(operand=parts[0], key=parts[1], at=self._next(at))
            return Node(parts)
        if kind in (_LIST, _STRUCT):
            return Node(tuple(self.node(v) for v in _children(kind, body)))
        if kind == _COMPREHENSION:
            return self._loop(body, at)
        if kind == _CONSTANT:
            for field, value in _fields(body):
                if field == _INT64:
                    return Constant(value=value - (1 << 64) if value >= 1 << 63 else value)
                if field == _STRING:
                    return Constant(value=value.decode())
        return Node()

    def _loop(self, body: bytes, at: int) -> Node:
        """A macro's comprehension (at the `(` of its arguments)."""
        start = self._word_before(at)
        macro, var = self._text[start:at].strip(), _last(body, _ITER_VAR).decode()
        accumulator = _last(body, _ACCU_VAR).decode()
        over = self.node(_last(body, _ITER_RANGE))
        if macro in ("map", "filter"):
            condition, item = _appended(_last(body, _STEP))
            if item is not None:
                kept = () if condition is None else (self.node(condition),)
                mapped = self.node(item) if macro == "map" else None
                return Loop(kept, macro, var, over, mapped, accumulator, start)
        parts = tuple(self.node(_last(body, f)) for f in (_CONDITION, _STEP, _RESULT))
        return Loop(parts, macro, var, over, None, accumulator, start)

    def _next(self, at: int) -> int:
        """Where the text goes on after the character at `at` (and any spaces)."""
        at += 1
        while at < len(self._text) and self._text[at].isspace():
            at += 1
        return at

    def _word_before(self, at: int) -> int:
        """Where the name before `at` (and any spaces) starts."""
        while at > 0 and self._text[at - 1].isspace():
            at -= 1
        while at > 0 and (self._text[at - 1].isalnum() or self._text[at - 1] == "_"):
            at -= 1
        return at


def _appended(step: bytes) -> tuple[bytes | None, bytes | None]:
    """What a `map` or `filter` step appends to the accumulator, and on which condition:
    `acc + [item]` or `cond ? acc + [item] : acc`; (None, None) for another step."""
    condition = None
    kind, body = _kind(step)
    if kind == _CALL and _last(body, 2) == b"_?_:_":
        arguments = [v for f, v in _fields(body) if f == 3]
        if len(arguments) != 3:
            return None, None
        condition, step = arguments[0], arguments[1]
        kind, body = _kind(step)
    if kind != _CALL or _last(body, 2) != b"_+_":
        return None, None
    arguments = [v for f, v in _fields(body) if f == 3]
    kind, listed = _kind(arguments[-1]) if len(arguments) == 2 else (0, b"")
    items = [v for f, v in _fields(listed) if f == 1] if kind == _LIST else []
    return (condition, items[0]) if len(items) == 1 else (None, None)


def _children(kind: int, body: bytes) -> Iterator[bytes]:
    """The sub-expressions of a list (its elements) or a map (its keys and values)."""
    if kind == _LIST:
        yield from (v for f, v in _fields(body) if f in _CHILDREN[_LIST])
        return
    for field, entry in _fields(body):
        if field == _STRUCT_ENTRIES:
            yield from (v for f, v in _fields(entry) if f in _ENTRY_CHILDREN)


def _message(serialized: bytes) -> tuple[bytes, bytes]:
    """The Any's message name (`cel.expr.ParsedExpr` or `CheckedExpr`) and its bytes."""
    envelope = dict(_fields(serialized))
    message = envelope.get(_ANY_TYPE, b"").rpartition(b"/")[2]
    if message not in _TREE_FIELD:
        raise ValueError(f"unexpected serialized CEL program {message!r}")
    return message, envelope.get(_ANY_VALUE, b"")


def _kind(expr: bytes) -> tuple[int, bytes]:
    """An Expr's node: (its field number, its bytes), the last one where there are several;
    (0, b"") for none."""
    found = (0, b"")
    for field, value in _fields(expr):
        if field > _ID:  # 3 a constant, 4-9 the node kinds
            found = (field, value)
    return found


def _last(data: bytes, number: int, default: Any = b"") -> Any:
    value = default
    for field, item in _fields(data):
        if field == number:
            value = item
    return value


def _fields(data: bytes) -> Iterator[tuple[int, Any]]:
    """The fields of one protobuf message: (field number, bytes) for a length-delimited one,
    (field number, int) for a varint; fixed-width ones are skipped."""
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
            value, position = _varint(data, position)
            yield field, value
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
