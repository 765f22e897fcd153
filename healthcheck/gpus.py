"""Which GPUs this node has, by index and bus id, from the best evidence at hand.

Shared by every check that maps evidence (kernel-log events, sysfs ports) onto GPUs:
the NVML snapshot first, then the `--query-gpu` CSV, then NVIDIA devices found in sysfs.
Computed once per run through the sources' memo.
"""

from __future__ import annotations

from dataclasses import dataclass

from .smi.query_csv import field_int, field_str, parse_query_csv
from .smi.values import SmiParseError
from .sources import artifacts as names
from .sources.base import Sources
from .sources.gpu_snapshot import normalise_bus_id
from .sources.pci import nvidia_gpus


@dataclass(frozen=True, slots=True)
class GpuRef:
    index: int
    pci_bus_id: str | None
    name: str | None = None


def known_gpus(sources: Sources) -> list[GpuRef]:
    return sources.memo("known_gpus", lambda: _find(sources))


def _find(sources: Sources) -> list[GpuRef]:
    snapshot, _reason = sources.gpu_snapshot()
    if snapshot is not None and snapshot.get("gpus"):
        return [
            GpuRef(int(g["index"]), g.get("pci_bus_id"), g.get("name"))
            for g in snapshot["gpus"]
            if isinstance(g.get("index"), int)
        ]
    query = sources.artifact(names.NVIDIA_SMI_QUERY_GPU)
    if query.text is not None:
        try:
            rows = parse_query_csv(query.text)
        except SmiParseError:
            rows = []
        refs = [
            GpuRef(
                _index(field_int(row, "index"), n),
                normalise_bus_id(field_str(row, "pci.bus_id")),
                field_str(row, "name"),
            )
            for n, row in enumerate(rows)
        ]
        if refs:
            return refs
    return [GpuRef(n, bdf) for n, bdf in enumerate(nvidia_gpus(sources.sysfs))]


def _index(printed: int | None, position: int) -> int:
    return position if printed is None else printed


def gpu_for_bus(gpus: list[GpuRef], bus_id: str | None) -> GpuRef | None:
    if bus_id is None:
        return None
    return next((g for g in gpus if g.pci_bus_id == bus_id), None)
