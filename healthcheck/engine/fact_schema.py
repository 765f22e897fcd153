"""The JSON Schema of what a rule reads: the checks' declared facts, as the engine shows them.

`engine.evaluate.build_activation` gives a rule `checks.<check>.{status, facts, metrics,
findings}`, the run's `findings`, `profile`, `params` and `node`; a GPU rule also sees
`gpu`, one record per GPU (`evaluate.gpu_views`): `index`, `pci_bus_id`, `name`, `uuid`
and, under each check's name, that check's record for the GPU (an entry of its `facts.gpus`,
or of `facts.per_gpu`). Here that activation is one JSON Schema document built from the checks'
declarations: each facts model's schema (`Declaration.facts`, its `$defs` renamed per check),
its metrics (`Declaration.metrics`) and the profile schema. A check that declares no facts
model (or failed to load) reads as "anything" below its name, never as an error.

`Shape` walks such a schema the way CEL walks the values: a field (`member`), the items a
comprehension visits (`items`), a literal index (`index`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec
from msgspec import Struct

from ..contract.declarations import declaration_of, resolve
from ..errors import ConfigError
from ..structs import json_schema

# The lists of a check's facts whose records become `gpu.<check>` (`identity.gpu_records`).
GPU_RECORD_LISTS = ("gpus", "per_gpu")
ANYTHING: Mapping[str, Any] = {}
_NAMES_SHOWN = 12


class Shape(Struct, frozen=True):
    """A place in the activation's schema: the schema there, and the document's `$defs`."""

    schema: Mapping[str, Any]
    defs: Mapping[str, Any]

    def branches(self) -> list[Mapping[str, Any]]:
        """The schemas a value here may have: `$ref`s followed, `anyOf` opened, null left out
        (an absent or null value is the evaluation's business)."""
        out: list[Mapping[str, Any]] = []
        pending: list[Mapping[str, Any]] = [self.schema]
        while pending and len(out) < 64:
            schema = pending.pop(0)
            ref = schema.get("$ref")
            if isinstance(ref, str):
                pending.insert(0, self.defs.get(ref.rpartition("/")[2], ANYTHING))
                continue
            alternatives = schema.get("anyOf")  # msgspec's unions and Optionals
            if isinstance(alternatives, list):
                pending[:0] = alternatives
                continue
            if schema.get("type") != "null":
                out.append(schema)
        return out

    def member(self, name: str) -> Shape | str:
        """The field `name` here, or why there is none (a message naming what there is)."""
        found: list[Mapping[str, Any]] = []
        known: list[str] = []
        kinds: list[str] = []
        for branch in self.branches():
            properties = branch.get("properties") or {}
            extra = branch.get("additionalProperties", True)
            if name in properties:
                found.append(properties[name])
            elif isinstance(extra, Mapping):
                found.append(extra)
            elif _open(branch) or (_kind(branch) == "object" and extra is not False):
                return Shape(ANYTHING, self.defs)
            elif _kind(branch) != "object":
                kinds.append(_kind(branch))
            else:
                known.extend(properties)
        if found:
            return self._union(found)
        if kinds and not known:
            return f"is {_article(kinds[0])}, which has no field {name!r}"
        return _no_such(name, known)

    def items(self) -> Shape | str:
        """What a comprehension over the value visits: a list's items, a map's keys."""
        found: list[Mapping[str, Any]] = []
        kinds: list[str] = []
        for branch in self.branches():
            kind = _kind(branch)
            if _open(branch):
                return Shape(ANYTHING, self.defs)
            if kind == "array":
                found.append(branch.get("items") or ANYTHING)
            elif kind == "object":
                found.append({"type": "string"})
            else:
                kinds.append(kind)
        if found:
            return self._union(found)
        return f"is {_article(kinds[0] if kinds else 'value')}, not a list or map"

    def index(self, key: object) -> Shape | str:
        """`value[key]`: a list's item, a map's entry (a string key names the field)."""
        found: list[Mapping[str, Any]] = []
        for branch in self.branches():
            if _open(branch):
                return Shape(ANYTHING, self.defs)
            if _kind(branch) == "array":
                found.append(branch.get("items") or ANYTHING)
            elif _kind(branch) == "object":
                if isinstance(key, str):
                    return self.member(key)
                extra = branch.get("additionalProperties", True)
                found.append(extra if isinstance(extra, Mapping) else ANYTHING)
        if found:
            return self._union(found)
        return "cannot be indexed"

    def listing(self) -> Shape:
        """A list of the values here (what `.map()` makes)."""
        return Shape({"type": "array", "items": dict(self.schema)}, self.defs)

    def _union(self, schemas: Sequence[Mapping[str, Any]]) -> Shape:
        if len(schemas) == 1:
            return Shape(schemas[0], self.defs)
        return Shape({"anyOf": list(schemas)}, self.defs)


def _open(schema: Mapping[str, Any]) -> bool:
    """A schema that says nothing of the value (`{}`, or a bare description)."""
    return not (
        {"type", "properties", "items", "additionalProperties", "enum", "const"} & set(schema)
    )


def _kind(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):  # ["integer", "null"]: null is the evaluation's business
        kind = next((k for k in kind if k != "null"), None)
    return kind if isinstance(kind, str) else "value"  # msgspec's schemas name every type


def _article(kind: str) -> str:
    words = {"integer": "an integer", "array": "a list", "object": "a map", "value": "a value"}
    return words.get(kind, f"a {kind}")


def _no_such(name: str, known: Iterable[str]) -> str:
    names = sorted(set(known))
    close = difflib.get_close_matches(name, names, n=1)
    if close:
        return f"has no field {name!r} (did you mean {close[0]!r}?)"
    shown = ", ".join(names[:_NAMES_SHOWN]) + (", ..." if len(names) > _NAMES_SHOWN else "")
    return f"has no field {name!r} (it has: {shown or 'nothing'})"


# --- the facts models' schemas ------------------------------------------------------------------


def facts_model(check: Any) -> Any | None:
    """The model (a msgspec Struct) a check declares for its facts, or None where it declares
    none."""
    reference = declaration_of(check).facts
    if reference is None:
        return None
    try:
        model = resolve(reference)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"check {check.name}: facts model {reference}: {exc}") from exc
    if not (isinstance(model, type) and issubclass(model, Struct)):
        raise ConfigError(f"check {check.name}: facts model {reference} is not a Struct")
    return model


def facts_schema(check: Any) -> dict[str, Any] | None:
    """The JSON Schema of a check's facts (what `sitscheck schema --facts CHECK` prints)."""
    model = facts_model(check)
    if model is None:
        return None
    schema = json_schema(model)
    schema["title"] = f"sitscheck facts: {check.name}"
    return schema


def schema_text(schema: Mapping[str, Any] | None) -> str:
    """A schema as the files of `schema/` hold it (`sitscheck schema --facts/--profile`)."""
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


# --- the activation ----------------------------------------------------------------------------


class Activation(Struct, frozen=True):
    """The activation's schema: `node` (what every rule reads) and `gpu` (a GPU rule's
    record), sharing one `$defs`; `unmodelled` names checks whose facts read as anything."""

    node: Mapping[str, Any]
    gpu: Mapping[str, Any]
    defs: Mapping[str, Any]
    checks: tuple[str, ...]
    unmodelled: tuple[str, ...]

    def names(self, scope: str) -> dict[str, Shape]:
        """The top-level names a rule of `scope` (node or gpu) reads, and their shapes."""
        names = {name: Shape(schema, self.defs) for name, schema in self.node["properties"].items()}
        if scope == "gpu":
            names["gpu"] = Shape(self.gpu, self.defs)
        return names


def activation(checks: Iterable[Any], profile: Mapping[str, Any]) -> Activation:
    """The activation's schema for `checks` (`contract.registry.discover()`, broken ones
    included) and the profile's JSON Schema (`ProfileSchema.json_schema()`)."""
    defs: dict[str, Any] = {}
    per_check: dict[str, Any] = {}
    per_gpu: dict[str, Any] = {}
    unmodelled: list[str] = []
    for check in checks:
        loaded = hasattr(check, "layer")  # a BrokenCheck's facts and metrics read as anything
        model = facts_model(check) if loaded else None
        if model is None:
            unmodelled.append(check.name)
            facts: Mapping[str, Any] = ANYTHING
            per_gpu[check.name] = ANYTHING
        else:  # the model's `$defs` join the document's as `<check>.<name>`
            template = f"#/$defs/{check.name}.{{name}}"
            (facts,), own = msgspec.json.schema_components((model,), ref_template=template)
            defs.update((f"{check.name}.{name}", body) for name, body in own.items())
            records = _gpu_records(Shape(facts, defs))
            if records:
                per_gpu[check.name] = records[0] if len(records) == 1 else {"anyOf": records}
        names = [m.name for m in declaration_of(check).metrics] if loaded else []
        metrics = _closed(_types(**dict.fromkeys(names, "number"))) if loaded else ANYTHING
        per_check[check.name] = _closed(
            {
                "status": {"type": "string"},
                "facts": facts,
                "metrics": metrics,
                "findings": {"type": "array", "items": {"type": "string"}},
            }
        )
    string = "string"
    finding = _closed(
        _types(code=string, check=string, severity=string, gpu="integer", pci_bus_id=string)
    )
    node = _closed(
        {
            "checks": _closed(per_check),
            "findings": {"type": "array", "items": finding},
            "profile": dict(profile),
            "params": ANYTHING,
            "node": ANYTHING,
        }
    )
    identity = _types(index="integer", pci_bus_id=string, name=string, uuid=string)
    gpu = _closed({**identity, **per_gpu})
    return Activation(node, gpu, defs, tuple(per_check), tuple(unmodelled))


def _closed(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": dict(properties), "additionalProperties": False}


def _types(**types: str) -> dict[str, Any]:
    """Fields of the given JSON types, by name."""
    return {name: {"type": kind} for name, kind in types.items()}


def _gpu_records(facts: Shape) -> list[dict[str, Any]]:
    """The object schemas of the entries of `facts.gpus` / `facts.per_gpu` (entries that are
    not records, such as topology's list of column names, make no GPU record), each with the
    `pairs` that name it (the engine joins them: `evaluate.gpu_views`)."""
    records = [r for name in GPU_RECORD_LISTS for r in _records(facts, name) if "properties" in r]
    pairs = [
        r
        for r in _records(facts, "pairs")
        if {"a_index", "b_index"} <= set(r.get("properties", ()))
    ]
    if pairs:
        listed = {"type": "array", "items": pairs[0]}
        records = [{**r, "properties": {**r["properties"], "pairs": listed}} for r in records]
    return records


def _records(facts: Shape, name: str) -> list[dict[str, Any]]:
    """The object schemas of the items of the list `facts.<name>` (none where there is none)."""
    field = facts.member(name)
    items = field if isinstance(field, str) else field.items()
    if isinstance(items, str):
        return []
    return [dict(b) for b in items.branches() if _kind(b) == "object"]
