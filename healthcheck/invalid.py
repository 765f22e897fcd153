"""msgspec's validation errors in the project's words: the key path and what is wrong.

msgspec says "Expected `int`, got `str` - at `$.otlp.port`"; a user reads
`otlp.port: expected an integer, got a string` (`Invalid.where`, `Invalid.what`), placed by
the caller after the file (and line) it came from. The path is written as the keys are
(`gpus.1.ecc.volatile.corrected`): where msgspec only says "an entry of this map"
(`[...]`), the entry is found again in the data. What is wrong never quotes the value (a
config value may be a credential; msgspec quotes one in "Invalid enum value"). A
`__post_init__` that starts its message with one of its fields (`"ignore_ports: ..."`) is
placed at that field.
"""

from __future__ import annotations

import difflib
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any

import msgspec

Path = tuple[str | int, ...]

_AT = re.compile(r"(?P<what>.*?)(?: - at (?P<key>`key` in )?`\$(?P<path>[^`]*)`)?", re.S)
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+|\.\.\.)\]")
_KINDS = {
    "int": "an integer",
    "float": "a number",
    "str": "a string",
    "bool": "a boolean",
    "null": "null",
    "object": "a mapping",
    "array": "a list",
}
_BOUNDS = {">=": "at least", ">": "greater than", "<=": "at most", "<": "less than"}
_SIZES = {"str": "characters", "array": "items", "object": "entries"}


class Invalid(ValueError):
    """A value that does not fit its model: where (the key path) and what is wrong."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what
        super().__init__(f"{self.where}: {what}" if path else what)

    @property
    def where(self) -> str:
        return ".".join(str(part) for part in self.path)


def explain(
    error: msgspec.ValidationError, model: Any, data: Any, convert: Callable[..., Any]
) -> Invalid:
    """`error`, raised converting `data` to `model`, as an `Invalid`. `convert(value, type)`
    is the conversion that failed (to find which entry of a map it failed on)."""
    found = _AT.fullmatch(str(error))
    text, at = (found["what"], found["path"] or "") if found else (str(error), "")
    if found and found["key"]:
        text = f"a key: {_words(text, None, None)}"  # a map's key, not its value
    segments = [
        name or (int(index) if index.isdigit() else index) for name, index in _SEGMENT.findall(at)
    ]
    path, here, value = _resolve(model, data, segments, convert)
    if field := re.fullmatch(r"Object (?:missing required|contains unknown) field `(.*)`", text):
        name = field[1]
        if text.startswith("Object missing"):
            return Invalid((*path, name), "required, not given")
        return Invalid((*path, name), "unknown key" + _close(name, _fields(here)))
    first, _, rest = text.partition(": ")
    if rest and first in _fields(here):  # a __post_init__ naming its field
        return Invalid((*path, first), rest)
    return Invalid(path, _words(text, here, value))


def _words(text: str, here: Any, value: Any) -> str:
    if got := re.fullmatch(r"Expected `([^`]+)`, got `([^`]+)`", text):
        return f"expected {_kinds(got[1])}, got {_kinds(got[2])}"
    if bound := re.fullmatch(r"Expected `[^`]+` (>=|>|<=|<) (\S+)", text):
        if isinstance(value, float) and not math.isfinite(value):  # .nan fails every bound
            return "must be a finite number"
        return f"must be {_BOUNDS[bound[1]]} {_number(bound[2])}"
    if size := re.fullmatch(r"Expected `(\w+)` of length (>=|<=) (\d+)", text):
        unit = _SIZES.get(size[1], "items")
        return f"must have {_BOUNDS[size[2]]} {size[3]} {unit[:-1] if size[3] == '1' else unit}"
    if text.startswith("Invalid enum value"):  # quotes the value: left out
        allowed = _allowed(here)
        return f"must be one of {allowed}" if allowed else "not one of the allowed values"
    return text


def _kinds(names: str) -> str:
    words = [_KINDS.get(name, name) for name in names.split(" | ")]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _number(text: str) -> str:
    try:
        return f"{float(text):g}"
    except ValueError:
        return text


def _close(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _allowed(model: Any) -> str:
    model = _bare(model)
    if typing.get_origin(model) is typing.Literal:
        values = typing.get_args(model)
    elif isinstance(model, type) and issubclass(model, Enum):
        values = tuple(member.value for member in model)
    else:
        return ""
    return ", ".join(repr(value) for value in values)


def _fields(model: Any) -> list[str]:
    model = _bare(model)
    if isinstance(model, type) and issubclass(model, msgspec.Struct):
        return [f.encode_name for f in msgspec.structs.fields(model)]
    return []


def _resolve(
    model: Any, data: Any, segments: list[str | int], convert: Callable[..., Any]
) -> tuple[Path, Any, Any]:
    """The path msgspec gave, with each map entry (`...`) named by its key, and the type and
    the value found at its end (Any and None where the walk loses them)."""
    path: list[str | int] = []
    for segment in segments:
        model = _arm(model, data)
        args = typing.get_args(model)
        if segment == "...":
            value_type = args[1] if len(args) == 2 else Any
            key = _failing_key(data, value_type, convert)
            if key is None:
                path.append("<key>")
                return tuple(path), Any, None
            path.append(key if isinstance(key, (str, int)) else str(key))
            model, data = value_type, data[key]
        elif isinstance(segment, int):
            path.append(segment)
            model = args[0] if args else Any
            data = data[segment] if isinstance(data, list) and segment < len(data) else None
        else:
            path.append(segment)
            model = next((f.type for f in _struct_fields(model) if f.encode_name == segment), Any)
            data = data.get(segment) if isinstance(data, Mapping) else None
    return tuple(path), _arm(model, data), data


def _failing_key(data: Any, value_type: Any, convert: Callable[..., Any]) -> Any:
    """The key of the first entry of `data` whose value does not convert (None: none)."""
    if not isinstance(data, Mapping):
        return None
    for key, value in data.items():
        try:
            convert(value, value_type)
        except msgspec.ValidationError:
            return key
    return None


def _struct_fields(model: Any) -> tuple[msgspec.structs.FieldInfo, ...]:
    if isinstance(model, type) and issubclass(model, msgspec.Struct):
        return msgspec.structs.fields(model)
    return ()


def _bare(model: Any) -> Any:
    """`model` without `Annotated` (its constraints and description)."""
    while typing.get_origin(model) is typing.Annotated:
        model = typing.get_args(model)[0]
    return model


def _arm(model: Any, data: Any) -> Any:
    """The type `data` is held to: `Annotated` left out, and of a union the arm of its kind."""
    model = _bare(model)
    arms = [_bare(arm) for arm in typing.get_args(model) if arm is not type(None)]
    if typing.get_origin(model) not in (typing.Union, types.UnionType):
        return model
    for arm in arms:
        origin = typing.get_origin(arm) or arm
        if isinstance(data, Mapping) and (origin is dict or _struct_fields(arm)):
            return arm
        if isinstance(data, list) and origin is list:
            return arm
    return arms[0] if arms else Any
