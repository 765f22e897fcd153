"""The schema of hardware profile files: the core keys and the `ProfileKey`s checks declare.

A profile (`profiles/*.yaml`) describes a GPU model: `name`, `match` (how it is picked) and
`params` are the core's; every other key is one a check declares (`profile_keys`) for the
rules that compare its facts with the hardware (`profile.<key>` in a rule). A dotted name
(`nvlink.per_pair`) is a key of a nested mapping (`nvlink:` then `per_pair:`); such a mapping
holds only its declared keys. A key's type is `number`, `integer`, `string`, `boolean`,
`object` (a mapping of anything, such as `params`), or a list of one of the scalar types
(`string[]`). A null value leaves the key unset (a site profile blanking a shipped key).

An unknown key (`tdpw:`) or a wrong type (`slowdown_c: "eighty-nine"`) is refused naming
file and line: by `sitscheck rules validate`, and by a run for the site's own profiles.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from msgspec import Struct, field

from ..contract.declarations import ProfileKey, declaration_of
from ..errors import ConfigError, RuleError
from .yaml_lines import line_of, value_line_of

CORE = "core"
CORE_KEYS = (
    ProfileKey(
        "name", "string", "the profile's name (a site profile of the same name overrides its keys)"
    ),
    ProfileKey("match", "object", "how the profile is picked when --profile names none"),
    ProfileKey(
        "match.names",
        "string[]",
        "regular expressions searched (case-insensitive) in each GPU's name",
    ),
    ProfileKey(
        "match.pci_device_ids",
        "string[]",
        "PCI device ids (hex, `2335`): a GPU whose device id starts or ends with one matches",
    ),
    ProfileKey("params", "object", "rule params for this hardware (over the shipped ones)"),
)
REQUIRED = ("name",)
SCALARS: Mapping[str, tuple[type, ...]] = {
    "number": (int, float),
    "integer": (int,),
    "string": (str,),
    "boolean": (bool,),
}
TYPES = (*SCALARS, "object", *(f"{name}[]" for name in SCALARS))


class KeySpec(Struct):
    """One key: its type, what it means, who declared it, and the keys nested under it."""

    type: str
    help: str
    owner: str
    children: dict[str, KeySpec] = field(default_factory=dict)


class ProfileSchema:
    """The keys a profile may set, from the core and the checks' declarations."""

    def __init__(self, declared: Iterable[tuple[str, ProfileKey]], broken: Iterable[str] = ()):
        self.keys: dict[str, KeySpec] = {}
        self.broken = tuple(broken)  # checks that failed to load: their keys are unknown
        for owner, key in declared:
            self._add(owner, key)

    @classmethod
    def of_checks(cls, checks: Iterable[Any]) -> ProfileSchema:
        """The core keys and those of `checks` (`contract.registry.discover()`)."""
        declared: list[tuple[str, ProfileKey]] = [(CORE, key) for key in CORE_KEYS]
        broken: list[str] = []
        for check in checks:
            if not hasattr(check, "layer"):  # a BrokenCheck
                broken.append(check.name)
                continue
            declared.extend((check.name, key) for key in declaration_of(check).profile_keys)
        return cls(declared, broken)

    def _add(self, owner: str, key: ProfileKey) -> None:
        if key.type not in TYPES:
            raise ConfigError(
                f"profile key {key.name!r} of {owner}: unknown type {key.type!r} "
                f"(one of {', '.join(TYPES)})"
            )
        *parents, last = key.name.split(".")
        level, where = self.keys, ""
        for part in parents:
            where = f"{where}.{part}" if where else part
            parent = level.setdefault(part, KeySpec("object", "", owner))
            if parent.type != "object":
                raise ConfigError(
                    f"profile key {key.name!r} of {owner}: {where!r} is a {parent.type} "
                    f"({parent.owner}), not a mapping"
                )
            level = parent.children
        spec = level.get(last)
        if spec is None:
            level[last] = KeySpec(key.type, key.help, owner)
        elif spec.type != key.type:
            raise ConfigError(
                f"profile key {key.name!r} declared as {spec.type} by {spec.owner} "
                f"and as {key.type} by {owner}"
            )
        elif not spec.help:  # made as the parent of a dotted key first
            spec.help, spec.owner = key.help, owner

    def problems(self, file: str, data: Any) -> list[RuleError]:
        """Every unknown key and wrong type in a profile's data (as `load_yaml` built it)."""
        if not isinstance(data, dict):
            return [RuleError(file, "a profile is a mapping (name, match, ...)", line_of(data))]
        out: list[RuleError] = []
        for name in REQUIRED:
            if name not in data:
                out.append(RuleError(file, f"a profile needs {name!r}", line_of(data)))
        self._mapping(file, data, self.keys, "", out)
        return out

    def _mapping(
        self,
        file: str,
        data: Mapping[str, Any],
        keys: Mapping[str, KeySpec],
        prefix: str,
        out: list[RuleError],
    ) -> None:
        for name, value in data.items():
            dotted, spec, line = f"{prefix}{name}", keys.get(name), value_line_of(data, name)
            if spec is None:
                message = self._unknown(dotted, keys, prefix)
                out.append(RuleError(file, message, line_of(data, name)))
            elif value is None:
                continue
            elif not _is(value, spec.type):
                out.append(RuleError(file, _wrong(dotted, spec.type, value), line))
            elif spec.children:
                self._mapping(file, value, spec.children, f"{dotted}.", out)
            elif spec.type.endswith("[]"):
                for position, item in enumerate(value):
                    if not _is(item, spec.type[:-2]):
                        message = _wrong(f"{dotted}[{position}]", spec.type[:-2], item)
                        out.append(RuleError(file, message, line_of(value, position, line)))

    def _unknown(self, dotted: str, keys: Mapping[str, KeySpec], prefix: str) -> str:
        name = dotted[len(prefix) :]
        close = difflib.get_close_matches(name, list(keys), n=1)
        hint = f"did you mean {prefix + close[0]!r}?" if close else ""
        if not hint:
            hint = "known: " + ", ".join(f"{prefix}{k}" for k in sorted(keys))
        if self.broken:
            hint += f"; check(s) {', '.join(self.broken)} failed to load, their keys are unknown"
        return f"unknown profile key {dotted!r} ({hint})"

    def json_schema(self) -> dict[str, Any]:
        """The profile schema as a JSON Schema (what `profile.<key>` reads in a rule)."""
        schema = _object(self.keys)
        schema["title"] = "sitscheck hardware profile"
        schema["required"] = list(REQUIRED)
        return schema


def _object(keys: Mapping[str, KeySpec]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: _key_schema(spec) for name, spec in keys.items()},
        "additionalProperties": False,
    }


def _key_schema(spec: KeySpec) -> dict[str, Any]:
    """A key's schema; null is allowed (it leaves the key unset)."""
    schema: dict[str, Any]
    if spec.type == "object":
        schema = _object(spec.children) if spec.children else {"type": "object"}
    elif spec.type.endswith("[]"):
        schema = {"type": "array", "items": {"type": spec.type[:-2]}}
    else:
        schema = {"type": spec.type}  # the scalar types are named as JSON Schema names them
    schema["type"] = [schema["type"], "null"]
    if spec.help:
        schema["description"] = f"{spec.help} ({spec.owner})"
    return schema


def _is(value: Any, kind: str) -> bool:
    if kind == "object" or kind.endswith("[]"):
        return isinstance(value, dict if kind == "object" else list)
    if isinstance(value, bool):
        return kind == "boolean"
    return isinstance(value, SCALARS[kind])


def _wrong(dotted: str, kind: str, value: Any) -> str:
    if kind == "object":
        wanted = "a mapping"
    elif kind.endswith("[]"):
        wanted = f"a list of {kind[:-2]}s"
    else:
        wanted = f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"
    shown = "a mapping" if isinstance(value, dict) else "a list" if isinstance(value, list) else ""
    return f"profile key {dotted!r} must be {wanted}, not {shown or repr(value)}"
