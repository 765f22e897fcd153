"""Which GPU a per-GPU record is: its PCI bus id, else its UUID, never its list position.

GPUs are joined across checks by this identity. Two records of one check that claim the
same identity are an inconsistency of the evidence (a bundle edited by hand, a driver that
listed one GPU twice): the check is UNKNOWN naming both, never a silent merge in which one
record's critical error is lost or lands on another GPU.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..sources.nvml_record import normalise_bus_id


def gpu_identity(record: dict[str, Any]) -> str | None:
    """`pci:0000:19:00.0`, else `uuid:GPU-...`, else `index:N`; None for no identity at all."""
    bus = record.get("pci_bus_id")
    if isinstance(bus, str) and bus.strip():
        return f"pci:{normalise_bus_id(bus)}"
    uuid = record.get("uuid")
    if isinstance(uuid, str) and uuid.strip():
        return f"uuid:{uuid.strip()}"
    index = record.get("index")
    if isinstance(index, int) and not isinstance(index, bool):
        return f"index:{index}"
    return None


def gpu_records(facts: dict[str, Any]) -> list[dict[str, Any]]:
    """A check's per-GPU records: the dicts of `facts.gpus` (or `facts.per_gpu`, where `gpus`
    is a list of names, as the topology facts are)."""
    records = [*(facts.get("gpus") or []), *(facts.get("per_gpu") or [])]
    return [r for r in records if isinstance(r, dict)]


def duplicated_identities(records: Iterable[dict[str, Any]]) -> list[str]:
    """One line per identity that two records claim, naming both records."""
    seen: dict[str, tuple[int, dict[str, Any]]] = {}
    problems: list[str] = []
    for position, record in enumerate(records):
        identity = gpu_identity(record)
        if identity is None:
            continue
        if identity in seen:
            first, earlier = seen[identity]
            problems.append(
                f"two GPU records claim {identity.partition(':')[2]}: record {first} "
                f"({_describe(earlier)}) and record {position} ({_describe(record)})"
            )
        else:
            seen[identity] = (position, record)
    return problems


def _describe(record: dict[str, Any]) -> str:
    keys = ("index", "pci_bus_id", "uuid")
    parts = [f"{key} {record[key]}" for key in keys if record.get(key) is not None]
    return ", ".join(parts) or "no identity"
