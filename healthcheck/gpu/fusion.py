"""Fuse the GPU evidence of every source into one record per GPU, keeping where each value
came from and what the sources disagree on.

Records of different sources are joined by PCI bus id, else UUID; a record carrying neither
(NVML's record of a lost GPU, a dmon row) joins by the driver's index, and only when the
source numbers GPUs the driver's way (`GpuFleet.indexed`: not `-q`'s printed order). List
position is never a join key. Two records of one source that claim one GPU are not merged:
both stay, and the fleet names them.

Per value, the first source in `calls.PRECEDENCE` that has a reading wins; a later source
fills what the earlier ones lack (a reading, or a state better than "not queried"), except a
read that failed (`error`, `timeout`: the check stays UNKNOWN naming the call), and the
record's `sources` map names the source of every value not from the record's own. Samples
are never mixed: the first source with samples gives them all (one sampling window). Values
that cannot change between two readings of one node (identity, firmware, limits, modes,
thresholds) are compared: a difference is a `Disagreement`; readings that move (power,
clocks, counters) are not compared. A GPU that any source finds lost is lost.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from msgspec import Struct, field

from ..sources.artifacts import GPU_IDENTITY_KEYS
from .calls import FAULT_STATES, IDENTITY_ONLY, KEY_PATHS, NVML, PRECEDENCE, SMI_L
from .records import SAMPLE_KEYS
from .view import Disagreement, GpuFleet, GpuView

SCALARS = GPU_IDENTITY_KEYS
GROUPS = (
    "pcie",
    "power",
    "temperature",
    "clocks_max_mhz",
    "ecc",
    "remap",
    "retired_pages",
    "violations_ns_start",
    "violations_ns_end",
)
# Lists taken whole from one source.
WHOLE = ("nvlink", "gpm")
# Values that do not move between two readings a few seconds apart, with the difference that
# is still agreement (a derived T.Limit threshold may be 1 C off: the two temperatures it is
# computed from are read one after the other).
Same = Callable[[Any, Any], bool]


def _exact(a: Any, b: Any) -> bool:
    return bool(a == b)


def _text(a: Any, b: Any) -> bool:
    return str(a).strip().lower() == str(b).strip().lower()


def _within(tolerance: float) -> Same:
    def same(a: Any, b: Any) -> bool:
        if isinstance(a, int | float) and isinstance(b, int | float):
            return abs(float(a) - float(b)) <= tolerance
        return bool(a == b)

    return same


COMPARED: Mapping[str, Same] = {
    "name": _text,
    "uuid": _text,
    "pci_bus_id": _text,
    "pci_device_id": _text,
    "serial": _text,
    "vbios": _text,
    "persistence_mode": _exact,
    "pcie.gen_max": _exact,
    "pcie.gen_device_max": _exact,
    "pcie.width_max": _exact,
    "power.enforced_limit_w": _within(0.5),
    "power.default_limit_w": _within(0.5),
    "clocks_max_mhz.sm": _exact,
    "clocks_max_mhz.mem": _exact,
    "temperature.shutdown_c": _within(1.0),
    "temperature.slowdown_c": _within(1.0),
    "temperature.gpu_max_c": _within(1.0),
    "temperature.mem_max_c": _within(1.0),
    "ecc.mode_enabled": _exact,
}


class _Entry(Struct):
    """One GPU being fused: its data so far, and the source (and reference) of each value."""

    index: int
    indexed: bool
    source: str
    ref: str
    data: dict[str, Any]
    sources: dict[str, str] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)  # the sources that gave a record

    def origin(self, path: str) -> str:
        named = [k for k in self.sources if path == k or path.startswith(k + ".")]
        return self.sources[max(named, key=len)] if named else self.source


def merge(fleets: Sequence[GpuFleet]) -> GpuFleet:
    """One fleet from the fleets of several sources (any order: they are put in precedence)."""
    ordered = sorted(fleets, key=_rank)
    problems = [p for f in ordered for p in f.problems]
    present = [f for f in ordered if f.gpus]
    if not present:
        first = ordered[0] if ordered else GpuFleet((), NVML, NVML)
        return GpuFleet((), first.source, first.ref, tuple(problems))
    entries: list[_Entry] = []
    disagreements: list[Disagreement] = []
    for fleet in present:
        for view in fleet.gpus:
            entry = _find(entries, view, fleet)
            if entry is None:
                entries.append(_new_entry(entries, view, fleet))
                if entries[-1].index != view.index and fleet.indexed:
                    problems.append(_unmatched(entries[-1], view, fleet))
            elif fleet.source in entry.seen:
                problems.append(_duplicate(entry, view, fleet))
                entries.append(_new_entry(entries, view, fleet, fresh_index=True))
            else:
                _merge_into(entry, view, fleet, disagreements)
    disagreements.extend(_node_wide(present))
    disagreements.extend(_unlisted(entries, present))
    gpus = tuple(
        GpuView(e.index, {**e.data, "sources": e.sources}, e.source, e.ref, dict(e.refs))
        for e in sorted(entries, key=lambda e: e.index)
    )
    primary = present[0]
    return GpuFleet(
        gpus,
        primary.source,
        " + ".join(f.ref for f in present),
        tuple(problems),
        indexed=any(f.indexed for f in present),
        complete=any(f.complete for f in present),
        attached=next((f.attached for f in present if f.attached is not None), None),
        driver_version=next((f.driver_version for f in present if f.driver_version), None),
        cuda_driver_version=next(
            (f.cuda_driver_version for f in present if f.cuda_driver_version), None
        ),
        sources=tuple(f.source for f in present),
        refs={f.source: f.ref for f in present},
        disagreements=tuple(disagreements),
        listed={f.source: len(f.gpus) for f in present if f.complete},
    )


def _rank(fleet: GpuFleet) -> int:
    return PRECEDENCE.index(fleet.source) if fleet.source in PRECEDENCE else len(PRECEDENCE)


def _find(entries: list[_Entry], view: GpuView, fleet: GpuFleet) -> _Entry | None:
    bus, uuid = view.pci_bus_id, folded(view.uuid)
    if bus:
        found = next((e for e in entries if e.data.get("pci_bus_id") == bus), None)
        if found is not None:
            return found
    if uuid:
        found = next((e for e in entries if folded(e.data.get("uuid")) == uuid), None)
        if found is not None:
            return found
    if not fleet.indexed:
        return None
    for entry in entries:
        if not entry.indexed or entry.index != view.index:
            continue
        if bus and entry.data.get("pci_bus_id"):
            continue  # both have a bus id and they differ: not this GPU
        if uuid and entry.data.get("uuid"):
            continue
        return entry
    return None


def folded(value: Any) -> str | None:
    """A text stripped and in lower case (None for no text): how two ids are compared."""
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


def _new_entry(
    entries: list[_Entry], view: GpuView, fleet: GpuFleet, fresh_index: bool = False
) -> _Entry:
    used = {e.index for e in entries}
    index = view.index
    if fresh_index or index in used:
        index = max(used, default=-1) + 1
    data = copy.deepcopy(dict(view.data))
    data.pop("sources", None)
    data["index"] = index
    return _Entry(
        index, fleet.indexed, fleet.source, fleet.ref, data, refs={fleet.source: fleet.ref},
        seen={fleet.source},
    )  # fmt: skip


def _duplicate(entry: _Entry, view: GpuView, fleet: GpuFleet) -> str:
    who = view.pci_bus_id or view.uuid or f"index {view.index}"
    return (
        f"{fleet.ref}: two records claim GPU {who} (GPU {entry.index} and GPU {view.index} "
        "of this output): kept apart, not merged"
    )


def _unmatched(entry: _Entry, view: GpuView, fleet: GpuFleet) -> str:
    who = view.pci_bus_id or view.uuid or "no bus id or UUID"
    return (
        f"{fleet.ref}: GPU {view.index} ({who}) is none of the GPUs the other sources list "
        f"under that index (bus id and UUID differ): numbered {entry.index} here"
    )


def _merge_into(
    entry: _Entry, view: GpuView, fleet: GpuFleet, disagreements: list[Disagreement]
) -> None:
    source, new = fleet.source, view.data
    entry.seen.add(source)
    entry.refs[source] = fleet.ref
    if fleet.indexed and not entry.indexed:
        entry.index, entry.indexed = view.index, True
        entry.data["index"] = view.index
    came = _From(source, fleet.ref, disagreements)
    for key in SCALARS:
        _leaf(entry, (key,), new.get(key), came)
    for group in GROUPS:
        _group(entry, (group,), new.get(group), came)
    for key in WHOLE:
        if not entry.data.get(key) and new.get(key):
            entry.data[key] = copy.deepcopy(new[key])
            entry.sources[key] = source
    if not entry.data.get("samples") and new.get("samples"):
        for key in ("samples", "sampled_s", "counters_s"):
            if key in new:
                entry.data[key] = copy.deepcopy(new[key])
        entry.sources["samples"] = source
        for key in set(SAMPLE_KEYS.values()):
            entry.data["unavailable"].pop(key, None)
            entry.data["failures"].pop(key, None)
    _states(entry, view, source)
    _lost(entry, view, fleet, disagreements)


class _From(Struct, frozen=True):
    """The source a record being merged came from, and where disagreements go."""

    source: str
    ref: str
    disagreements: list[Disagreement]


def _leaf(entry: _Entry, path: tuple[str, ...], value: Any, came: _From) -> None:
    source = came.source
    if value is None:
        return
    node = entry.data
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    dotted = ".".join(path)
    mine = node.get(path[-1])
    if mine is None or (isinstance(mine, dict) and not mine):
        if _failed(entry.data, dotted):
            return  # the read failed where it was made: that stays the answer (UNKNOWN)
        node[path[-1]] = copy.deepcopy(value)
        if source != entry.source:
            entry.sources[dotted] = source
        _drop_states(entry.data, dotted)
        return
    same = COMPARED.get(dotted)
    if same is not None and not same(mine, value):
        origin = entry.origin(dotted)
        came.disagreements.append(
            Disagreement(
                dotted,
                entry.index,
                entry.data.get("pci_bus_id"),
                (origin, entry.refs.get(origin, entry.ref), mine),
                (source, came.ref, value),
            )
        )


def _group(entry: _Entry, path: tuple[str, ...], value: Any, came: _From) -> None:
    if not isinstance(value, dict):
        _leaf(entry, path, value, came)
        return
    for key, child in value.items():
        _group(entry, (*path, key), child, came)


def _covering(data: Mapping[str, Any], dotted: str) -> list[str]:
    """The unavailable keys that stand for the value at `dotted` (itself or a group of it)."""
    keys = []
    for key in data.get("unavailable") or {}:
        path = KEY_PATHS.get(key, key)
        if path == dotted or dotted.startswith(path + "."):
            keys.append(key)
    return keys


def _failed(data: Mapping[str, Any], dotted: str) -> bool:
    states = data.get("unavailable") or {}
    return any(states[key] in FAULT_STATES for key in _covering(data, dotted))


def _drop_states(data: dict[str, Any], dotted: str) -> None:
    """A value filled at `dotted`: the states that said it was missing no longer hold."""
    for key in _covering(data, dotted):
        data["unavailable"].pop(key, None)
        data.get("failures", {}).pop(key, None)


def _states(entry: _Entry, view: GpuView, source: str) -> None:
    """Where no source has a reading, the first state better than "not queried" stands."""
    unavailable: dict[str, str] = entry.data.setdefault("unavailable", {})
    failures: dict[str, str] = entry.data.setdefault("failures", {})
    samples_here = entry.sources.get("samples", entry.source) == source
    for key, state in view.unavailable.items():
        if key in SAMPLE_KEYS.values() and not samples_here:
            continue
        if _has_value(entry.data, KEY_PATHS.get(key, key)):
            continue
        if key not in unavailable or (unavailable[key] == "not_queried" != state):
            unavailable[key] = state
            if key in view.failures:
                failures[key] = view.failures[key]
            else:
                failures.pop(key, None)


def _has_value(data: Mapping[str, Any], dotted: str) -> bool:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return False
        node = node.get(part)
    if isinstance(node, dict):
        return any(v is not None for v in node.values())
    return node is not None and node != []


def _lost(entry: _Entry, view: GpuView, fleet: GpuFleet, disagreements: list[Disagreement]) -> None:
    lost, mine = view.lost, entry.data.get("lost")
    if (lost is None) == (mine is None):
        return
    answering = entry.source if lost is not None else fleet.source
    silent = fleet.source if lost is not None else entry.source
    state = (lost or mine or {}).get("state", "gpu_lost")
    disagreements.append(
        Disagreement(
            "lost",
            entry.index,
            entry.data.get("pci_bus_id"),
            (answering, entry.refs.get(answering, fleet.ref), "answers"),
            (silent, entry.refs.get(silent, fleet.ref), state),
        )
    )
    if lost is not None:
        entry.data["lost"] = copy.deepcopy(dict(lost))
        entry.sources["lost"] = fleet.source


def _unlisted(entries: Sequence[_Entry], fleets: Sequence[GpuFleet]) -> list[Disagreement]:
    """GPUs a source that lists every GPU does not list, where the counts agree (where they do
    not, the count itself is the finding): two sources name different GPUs."""
    complete = [f for f in fleets if f.complete and f.source not in IDENTITY_ONLY - {SMI_L}]
    if len({len(f.gpus) for f in complete}) > 1:
        return []
    found = []
    for entry in entries:
        for fleet in complete:
            if fleet.source in entry.seen:
                continue
            found.append(
                Disagreement(
                    "listed",
                    entry.index,
                    entry.data.get("pci_bus_id"),
                    (entry.source, entry.ref, "lists it"),
                    (fleet.source, fleet.ref, "does not list it"),
                )
            )
    return found


def _node_wide(fleets: Sequence[GpuFleet]) -> list[Disagreement]:
    found: list[Disagreement] = []
    for what in ("driver_version", "cuda_driver_version"):
        values = [(f.source, f.ref, v) for f in fleets if (v := getattr(f, what))]
        first = values[0] if values else None
        for other in values[1:]:
            assert first is not None
            if str(other[2]).strip() != str(first[2]).strip():
                found.append(Disagreement(what, None, None, first, other))
    return found
