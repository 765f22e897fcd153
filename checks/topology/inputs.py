"""The topology check's inputs: the NVML snapshot as it reads it, and each GPU's sysfs affinity.

`TopologyInputs` is what the check hands to `judge.judge`; `nvml_view` reads the snapshot's
GPUs, NVLink states and GPU pairs. The evidence helpers name where a finding's facts come from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct, field
from sitscheck.gpu.fleet import from_snapshot
from sitscheck.gpu.view import GpuView
from sitscheck.models import Device, Evidence

from .parse import TopoMatrix

TOPO = "nvidia-smi topo -m"
NVML = "nvml"
EXCERPT = 2000


class NvmlGpu(Struct, frozen=True):
    """One GPU as the NVML snapshot shows it; NVLink fields None when NVLink was not read."""

    index: int
    pci_bus_id: str | None
    lost: bool = False
    nvlink_links: int | None = None  # link slots read
    nvlink_active: int | None = None  # links reported active
    nvlink_unknown: int = 0  # links whose state could not be read
    remotes: tuple[str | None, ...] = ()  # remote PCI bus id of each active link


class NvmlPair(Struct, frozen=True):
    """One GPU pair in the NVML snapshot: common ancestor, and whether P2P runs over NVLink."""

    a: int
    b: int
    common_ancestor: str | None
    p2p_nvlink: bool | None


class NvmlView(Struct, frozen=True):
    """The NVML snapshot's GPUs and pairs, as the topology check reads them."""

    gpus: tuple[NvmlGpu, ...]
    pairs: tuple[NvmlPair, ...]
    ref: str

    def gpu(self, index: int) -> NvmlGpu | None:
        return next((g for g in self.gpus if g.index == index), None)

    def pair(self, a: int, b: int) -> NvmlPair | None:
        low, high = min(a, b), max(a, b)
        return next((p for p in self.pairs if (p.a, p.b) == (low, high)), None)


class SysfsAffinity(Struct, frozen=True):
    """A GPU's PCI device in sysfs: `numa_node` (None when absent or -1) and `local_cpulist`."""

    numa_node: int | None
    cpulist: str | None


class TopologyInputs(Struct, frozen=True):
    """What the check hands in: the matrix, the NVML view, listed indices, sysfs affinity."""

    matrix: TopoMatrix | None = None
    topo_ref: str | None = None
    nvml: NvmlView | None = None
    listed: tuple[int, ...] | None = None  # nvidia-smi -L indices, used when NVML is absent
    listed_ref: str | None = None
    sysfs: Mapping[int, SysfsAffinity] = field(default_factory=dict)


def nvml_view(snapshot: Mapping[str, Any], ref: str) -> NvmlView | None:
    """The GPUs, NVLink states and GPU pairs of an NVML snapshot (nvml.json); None if none."""
    if snapshot.get("error") or not isinstance(snapshot.get("gpus"), list):
        return None
    gpus = tuple(_nvml_gpu(view) for view in from_snapshot(snapshot, ref).gpus)
    pairs: list[NvmlPair] = []
    for raw in snapshot.get("pairs") or []:
        if (
            isinstance(raw, dict)
            and isinstance(raw.get("a"), int)
            and isinstance(raw.get("b"), int)
        ):
            ancestor = raw.get("common_ancestor")
            p2p = raw.get("p2p_nvlink")
            pairs.append(
                NvmlPair(
                    min(raw["a"], raw["b"]),
                    max(raw["a"], raw["b"]),
                    ancestor if isinstance(ancestor, str) else None,
                    p2p if isinstance(p2p, bool) else None,
                )
            )
    return NvmlView(gpus, tuple(pairs), ref)


def _nvml_gpu(view: GpuView) -> NvmlGpu:
    lost = view.lost is not None
    links = [entry for entry in view.get("nvlink") or [] if isinstance(entry, dict)]
    if not links:
        return NvmlGpu(view.index, view.pci_bus_id, lost)
    active = [entry for entry in links if entry.get("active") is True]
    return NvmlGpu(
        index=view.index,
        pci_bus_id=view.pci_bus_id,
        lost=lost,
        nvlink_links=len(links),
        nvlink_active=len(active),
        nvlink_unknown=sum(1 for entry in links if entry.get("active") is None),
        remotes=tuple(_text(entry.get("remote_pci_bus_id")) for entry in active),
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def gpu_device(index: int, nvml: NvmlView | None) -> Device:
    """A finding's GPU: its index, and its bus id where NVML lists it."""
    gpu = nvml.gpu(index) if nvml else None
    return Device(index=index, pci_bus_id=gpu.pci_bus_id if gpu else None)


def topo_evidence(inputs: TopologyInputs, excerpt: str) -> Evidence:
    """The matrix as a finding's evidence: its file and what it shows."""
    return Evidence(source=TOPO, ref=inputs.topo_ref, excerpt=excerpt[:EXCERPT])
