"""A report model (a msgspec Struct) as JSON values, each field at its default left out at
every level: the normalised form the expected reports keep (tests/storm, tests/judged)."""

from __future__ import annotations

from functools import cache
from typing import Any

import msgspec

PLAIN = frozenset((str, int, float, bool, type(None)))  # their own JSON values (an enum is not)


def without_defaults(value: Any) -> Any:
    """`value` as JSON values, each Struct's fields at their default left out, at every level."""
    if type(value) in PLAIN:
        return value
    if isinstance(value, msgspec.Struct):
        pairs = (
            (name, getattr(value, attr), default) for name, attr, default in _fields(type(value))
        )
        return {name: without_defaults(v) for name, v, default in pairs if v != default}
    if isinstance(value, (list, tuple)):
        return [without_defaults(v) for v in value]
    if isinstance(value, dict):
        return {str(k): without_defaults(v) for k, v in value.items()}
    return msgspec.to_builtins(value)


@cache
def _fields(struct: type[msgspec.Struct]) -> list[tuple[str, str, Any]]:
    """Each field's JSON name, attribute name and default."""
    return [(f.encode_name, f.name, _default(f)) for f in msgspec.structs.fields(struct)]


def _default(field: msgspec.structs.FieldInfo) -> Any:
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return field.default
