"""The models' one library: msgspec Structs, validated, as JSON and as JSON Schema.

The report, the run configuration, the daemon's state, the checks' facts and settings are
`msgspec.Struct`s like every record. A Struct's `__init__` takes what it is given; data
from outside (a config file, a check's config section, a state file, a recording) comes in
through `convert`, which checks every type and bound and raises a mistake as an
`invalid.Invalid` (the key path and what is wrong, in words). `json_schema` is a model's JSON
Schema with its root written out (as scripts read it); `json_text` a value as indented JSON.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePath
from typing import Any, TypeVar

import msgspec

from .invalid import Invalid, explain

T = TypeVar("T")

__all__ = ["Invalid", "convert", "json_schema", "json_text"]


def convert(data: Any, model: type[T], *, strict: bool = True) -> T:
    """`data` (plain values: what JSON or YAML gives) as `model`, every type and bound
    checked. `strict=False` reads a number or boolean written as text ("8"), as YAML and
    the command line may give one."""

    def attempt(value: Any, target: Any) -> Any:
        return msgspec.convert(value, target, strict=strict, dec_hook=_decode)

    try:
        result: T = attempt(data, model)
    except msgspec.ValidationError as exc:
        raise explain(exc, model, data, attempt) from exc
    return result


def _decode(model: Any, value: Any) -> Any:
    if model is Path:
        if isinstance(value, (str, PurePath)):
            return Path(value)
        raise TypeError("expected a path (a string)")
    raise NotImplementedError


def json_schema(model: Any) -> dict[str, Any]:
    """The JSON Schema of `model`: its own object at the root, what it refers to in `$defs`."""
    schema = msgspec.json.schema(model)
    defs: dict[str, Any] = schema.pop("$defs", {})
    ref = schema.get("$ref")
    name = ref.rpartition("/")[2] if isinstance(ref, str) else None
    if name is None or name not in defs:
        return schema
    root = dict(defs[name])
    if f'"{ref}"' not in json.dumps(defs):  # nothing else refers to it: written once, at the root
        del defs[name]
    return {**root, "$defs": defs} if defs else root


def json_text(value: Any, indent: int = 2) -> str:
    """`value` (Structs, lists, maps, plain values) as indented JSON text."""
    return msgspec.json.format(msgspec.json.encode(value), indent=indent).decode("utf-8")
