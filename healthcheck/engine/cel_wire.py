"""Reading cel-expr-python's serialized programs: the syntax tree, from its protobuf wire form.

A compiled program serializes (`Expression.serialize`, the runtime's public API) as a
`google.protobuf.Any` holding a `cel.expr.ParsedExpr` (unchecked, as `cel_google` compiles)
or a `cel.expr.CheckedExpr` (cel-spec's syntax.proto / checked.proto), read here by field
number with no protobuf classes: `syntax`, the tree (`syntax.py`) every compiled expression
is bounded and scoped by and `rules validate` checks the fact paths of, with where each node
is in the text (the source info's positions).
"""

from __future__ import annotations

from typing import Any

from .syntax import Constant, Index, Loop, Name, Node, Select

# The Any's fields; the field of the tree and of its source info in each message; then
# Expr's fields: its id, and the field of each node kind:
_ANY_TYPE, _ANY_VALUE = 1, 2
_TREE_FIELD = {b"cel.expr.ParsedExpr": 2, b"cel.expr.CheckedExpr": 4}
_SOURCE_INFO_FIELD = {b"cel.expr.ParsedExpr": 3, b"cel.expr.CheckedExpr": 5}
_ID = 2
_CONSTANT, _IDENT, _SELECT, _CALL, _LIST, _STRUCT, _COMPREHENSION = 3, 4, 5, 6, 7, 8, 9
_CALL_PARTS, _ARGS, _ITEMS = (1, 3), 3, 1  # a call's target and args, its args; a list's
_STRUCT_ENTRIES = 2  # a struct's entries; an entry's map_key (3) and value (4)
# A comprehension's fields: its variable, range, accumulator, the accumulator's start, the
# loop's condition, its step and result.
_ITER_VAR, _ITER_RANGE, _ACCU_VAR, _ACCU_INIT, _CONDITION, _STEP, _RESULT = range(1, 8)
_INT64, _STRING = 3, 6  # Constant's fields that can index
_POSITIONS = 4  # SourceInfo's map of an Expr's id to its offset in the text


def syntax(serialized: bytes, text: str = "") -> Node:
    """The syntax (`syntax.py`) of a serialized program compiled from `text`. The runtime
    expands each macro into a comprehension: the macro's name is read back from the text
    before it, and a `map` or `filter` is told by what its step appends. Without the text,
    no node says where it is and no macro is named (all `shape_of` needs: a third of the
    time)."""
    envelope = _read(serialized)
    message = _one(envelope, _ANY_TYPE).rpartition(b"/")[2]
    if message not in _TREE_FIELD:
        raise ValueError(f"unexpected serialized CEL program {message!r}")
    body = _read(_one(envelope, _ANY_VALUE))
    places: dict[int, int] = {}
    for entry in _read(_one(body, _SOURCE_INFO_FIELD[message])).get(_POSITIONS, ()) if text else ():
        pair = _read(entry)
        places[_one(pair, 1, 0)] = _one(pair, 2, 0)
    return _Syntax(places, text).node(_one(body, _TREE_FIELD[message]))


class _Syntax:
    """Builds the nodes of one program's tree; `places`: each Expr id's offset in `text`."""

    def __init__(self, places: dict[int, int], text: str) -> None:
        self._places, self._text = places, text

    def node(self, expr: bytes) -> Node:
        fields = _read(expr)
        kind = max((f for f in fields if f > _ID), default=0)  # 3 a constant, 4-9 the kinds
        body = _read(fields[kind][-1]) if kind else {}
        at = self._places.get(_one(fields, _ID, 0), 0)
        if kind == _IDENT:
            return Name(name=_one(body, 1).decode(), at=at)
        if kind == _SELECT:  # at its `.` (a `has()`'s at its `(`)
            operand = self.node(_one(body, 1))
            return Select(operand=operand, field=_one(body, 2).decode(), at=self._next(at))
        if kind == _CALL:
            parts = tuple(self.node(v) for f in _CALL_PARTS for v in body.get(f, ()))
            if _one(body, 2) == b"_[_]" and len(parts) == 2:  # at its `[`
                return Index(operand=parts[0], key=parts[1], at=self._next(at))
            return Node(parts)
        if kind == _LIST:
            return Node(tuple(self.node(v) for v in body.get(_ITEMS, ())))
        if kind == _STRUCT:
            entries = [_read(entry) for entry in body.get(_STRUCT_ENTRIES, ())]
            return Node(tuple(self.node(v) for e in entries for f in (3, 4) for v in e.get(f, ())))
        if kind == _COMPREHENSION:
            return self._loop(body, at)
        if kind == _CONSTANT and _INT64 in body:
            value = _one(body, _INT64)
            return Constant(value=value - (1 << 64) if value >= 1 << 63 else value)
        if kind == _CONSTANT and _STRING in body:
            return Constant(value=_one(body, _STRING).decode())
        return Node()

    def _loop(self, body: dict[int, list[Any]], at: int) -> Node:
        """A macro's comprehension (at the `(` of its arguments)."""
        start = self._word_before(at)
        macro, var = self._text[start:at].strip(), _one(body, _ITER_VAR).decode()
        accumulator = _one(body, _ACCU_VAR).decode()
        over = self.node(_one(body, _ITER_RANGE))
        if macro in ("map", "filter"):
            condition, item = _appended(_one(body, _STEP))
            if item is not None:
                kept = () if condition is None else (self.node(condition),)
                mapped = self.node(item) if macro == "map" else None
                return Loop(kept, macro, var, over, mapped, accumulator, start)
        parts = tuple(self.node(_one(body, f)) for f in (_CONDITION, _STEP, _RESULT))
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
    call = _read(_one(_read(step), _CALL))
    if _one(call, 2) == b"_?_:_":
        arguments = call.get(_ARGS, [])
        if len(arguments) != 3:
            return None, None
        condition, call = arguments[0], _read(_one(_read(arguments[1]), _CALL))
    arguments = call.get(_ARGS, []) if _one(call, 2) == b"_+_" else []
    listed = _read(arguments[-1]).get(_LIST) if len(arguments) == 2 else None
    items = _read(listed[-1]).get(_ITEMS, []) if listed else []
    return (condition, items[0]) if len(items) == 1 else (None, None)


def _one(fields: dict[int, list[Any]], number: int, default: Any = b"") -> Any:
    """A field's value (the last, where it repeats), or `default`."""
    values = fields.get(number)
    return values[-1] if values else default


def _read(data: bytes) -> dict[int, list[Any]]:
    """The fields of one protobuf message by number, each a list of its values in order:
    bytes for a length-delimited field, an int for a varint; fixed-width ones skipped."""
    fields: dict[int, list[Any]] = {}
    position, end = 0, len(data)
    while position < end:
        key, position = _varint(data, position)
        field, wire = key >> 3, key & 7
        if wire == 2:
            size, position = _varint(data, position)
            value: Any = data[position : position + size]
            position += size
        elif wire == 0:
            value, position = _varint(data, position)
        elif wire in (1, 5):
            position += 8 if wire == 1 else 4
            continue
        else:
            raise ValueError(f"unexpected protobuf wire type {wire}")
        fields.setdefault(field, []).append(value)
    return fields


def _varint(data: bytes, position: int) -> tuple[int, int]:
    byte = data[position]
    if byte < 0x80:  # most are one byte
        return byte, position + 1
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
