"""Which GPUs this node has, by index and bus id, from the best evidence at hand.

Shared by every check that maps evidence (kernel-log events, sysfs ports) onto GPUs:
the GPU views (`fleet.load`: the NVML snapshot, else nvidia-smi's CSV/dmon), else the
NVIDIA devices found in sysfs.
Computed once per run through the sources' memo.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..sources.base import Sources
from ..sources.pci import nvidia_gpus


@dataclass(frozen=True, slots=True)
class GpuRef:
    index: int
    pci_bus_id: str | None
    name: str | None = None


def known_gpus(sources: Sources) -> list[GpuRef]:
    return sources.memo("known_gpus", lambda: _find(sources))


def _find(sources: Sources) -> list[GpuRef]:
    from .fleet import load

    fleet = load(sources)
    if not isinstance(fleet, str) and fleet.gpus:
        return [GpuRef(view.index, view.pci_bus_id, view.name) for view in fleet.gpus]
    return [GpuRef(n, bdf) for n, bdf in enumerate(nvidia_gpus(sources.sysfs))]


def gpu_for_bus(gpus: list[GpuRef], bus_id: str | None) -> GpuRef | None:
    if bus_id is None:
        return None
    return next((g for g in gpus if g.pci_bus_id == bus_id), None)
