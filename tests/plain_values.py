"""A report model (a msgspec Struct) as JSON values, each field at its default left out at
every level: the normalised form the expected reports keep (tests/storm, tests/judged)."""

from __future__ import annotations

from typing import Any

import msgspec


def without_defaults(value: Any) -> Any:
    """`value` as JSON values, each Struct's fields at their default left out, at every level."""
    if isinstance(value, msgspec.Struct):
        fields = msgspec.structs.fields(value)
        pairs = ((f.encode_name, getattr(value, f.name), _default(f)) for f in fields)
        return {name: without_defaults(v) for name, v, default in pairs if v != default}
    if isinstance(value, (list, tuple)):
        return [without_defaults(v) for v in value]
    if isinstance(value, dict):
        return {str(k): without_defaults(v) for k, v in value.items()}
    return msgspec.to_builtins(value)


def _default(field: msgspec.structs.FieldInfo) -> Any:
    if field.default_factory is not msgspec.NODEFAULT:
        return field.default_factory()
    return field.default
