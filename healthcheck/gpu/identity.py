"""Which GPUs this node has, by index and bus id, from the best evidence at hand.

Shared by every check that maps evidence (kernel-log events, sysfs ports) onto GPUs:
the GPU views (`fleet.load`: every GPU output fused, each GPU's identity completed by
`resolve`, so a lost GPU keeps the bus id and model sysfs or the last known inventory give
it, and an Xid naming its bus id names it), else the NVIDIA devices found in sysfs.
Computed once per run through the sources' memo. When the list is sysfs's because a command
the GPU views waited on did not answer (a hung `nvidia-smi`, killed at its deadline),
`gpu_list_notes` says so, naming the command, for every check that used the list.
"""

from __future__ import annotations

from msgspec import Struct

from ..sources.base import Sources
from ..sources.pci import nvidia_gpus


class GpuRef(Struct, frozen=True):
    """One GPU of this node: its index, and its PCI bus id and name where known."""

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


# What a GPU view's failure says when a command it waited on did not answer (command.py,
# fleet._read, deadline's "not started").
_HUNG = ("did not answer within", "not started:", "not run, an earlier")


def gpu_list_notes(sources: Sources) -> list[str]:
    """Why the GPU list came from sysfs, when that was a command that did not answer (one
    line for `not_judged`); [] otherwise (a node without NVIDIA's tools says nothing)."""
    from .fleet import load

    fleet = load(sources)
    if isinstance(fleet, str) and any(marker in fleet for marker in _HUNG):
        return [f"GPU list from sysfs (the GPU views failed: {fleet})"]
    return []


def gpu_for_bus(gpus: list[GpuRef], bus_id: str | None) -> GpuRef | None:
    if bus_id is None:
        return None
    return next((g for g in gpus if g.pci_bus_id == bus_id), None)
