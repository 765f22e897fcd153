"""Per GPU: its peers, its nearest NIC, and whether its CPU and NUMA affinity hold together.

The affinity the matrix prints is compared with the GPU's sysfs `local_cpulist` and
`numa_node`, and with the other GPUs on the same NUMA node (the odd one out is named).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .inputs import NvmlView, SysfsAffinity
from .pairs import Pair, matrix_cells
from .parse import TopoMatrix

# PCIe path kinds from nearest to farthest (nvidia-smi's legend order).
_PCIE_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4, "SOC": 4}  # SOC: old SYS


def cpu_set(text: str | None) -> frozenset[int] | None:
    """``0-31,64-95`` → the CPU numbers; None for N/A, empty or unreadable text."""
    if not text:
        return None
    cpus: set[int] = set()
    for part in text.strip().split(","):
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()):
            return None
        first, last = int(low), int(high) if dash else int(low)
        if last < first or last - first > 65536:
            return None
        cpus.update(range(first, last + 1))
    return frozenset(cpus) or None


def _printed(value: str | None) -> str | None:
    """An affinity cell as a value: None for an absent column or ``N/A``."""
    return None if value is None or value.upper() == "N/A" else value


def per_gpu(
    indices: list[int],
    matrix: TopoMatrix | None,
    nvml: NvmlView | None,
    pairs: list[Pair],
    sysfs: Mapping[int, SysfsAffinity],
    topo_indices: list[int],
) -> list[dict[str, Any]]:
    affinity = matrix.affinity if matrix else {}
    numa_cpus = _numa_groups(affinity.items())
    records = []
    for index in indices:
        name = f"GPU{index}"
        gpu = nvml.gpu(index) if nvml else None
        mine = [p for p in pairs if index in (p.a, p.b)]
        counts = [p.topo_nvlink for p in mine if p.topo_nvlink]
        nic, nic_kind = _nearest_nic(matrix, name)
        row = affinity.get(name)
        on_sysfs = sysfs.get(index)
        present, consistent, note = _affinity_judgement(
            row.cpu if row else None, row.numa if row else None, on_sysfs, numa_cpus
        )
        records.append(
            {
                "index": index,
                "name": name,
                "pci_bus_id": gpu.pci_bus_id if gpu else None,
                "in_matrix": index in topo_indices,
                "nearest_nic": nic,
                "nearest_nic_kind": nic_kind,
                "nvlink_peers": sum(1 for p in mine if p.on_nvlink is True),
                "pcie_peers": sum(1 for p in mine if p.on_nvlink is False),
                "min_nvlink": min(counts) if counts else None,
                "nvlink_active": gpu.nvlink_active if gpu else None,
                "nvlink_links": gpu.nvlink_links if gpu else None,
                "cpu_affinity": row.cpu if row else None,
                "numa": row.numa if row else None,
                "gpu_numa_id": row.gpu_numa_id if row else None,
                "sysfs_numa_node": on_sysfs.numa_node if on_sysfs else None,
                "sysfs_cpulist": on_sysfs.cpulist if on_sysfs else None,
                "affinity_present": present,
                "affinity_consistent": consistent,
                "affinity_note": note,
            }
        )
    return records


def _nearest_nic(matrix: TopoMatrix | None, gpu: str) -> tuple[str | None, str | None]:
    """The NIC with the nearest PCIe path from ``gpu`` (first in header order on a tie)."""
    if matrix is None or not matrix.nics:
        return None, None
    cells = matrix_cells(matrix)
    best: tuple[int, str, str] | None = None
    for position, nic in enumerate(matrix.nics):
        kind = cells.get((gpu, nic))
        if kind not in _PCIE_RANK:
            continue
        rank = _PCIE_RANK[kind] * 10_000 + position
        if best is None or rank < best[0]:
            best = (rank, nic, kind)
    if best is None:
        return None, None
    return matrix.nic_legend.get(best[1], best[1]), best[2]


def _numa_groups(rows: Iterable[tuple[str, Any]]) -> dict[str, dict[frozenset[int], list[str]]]:
    """NUMA node (as printed) → each distinct CPU set the GPUs on it print → those GPUs."""
    groups: dict[str, dict[frozenset[int], list[str]]] = {}
    for name, row in rows:
        numa, cpus = _printed(row.numa), cpu_set(_printed(row.cpu))
        if numa is not None and cpus is not None:
            groups.setdefault(numa, {}).setdefault(cpus, []).append(name)
    return groups


def _affinity_judgement(
    cpu: str | None,
    numa: str | None,
    sysfs: SysfsAffinity | None,
    numa_cpus: dict[str, dict[frozenset[int], list[str]]],
) -> tuple[bool | None, bool | None, str | None]:
    """(present, consistent, why not consistent); None where there is nothing to judge."""
    if cpu is None and numa is None:
        return None, None, None  # no affinity columns (topo -p2p) or not in the matrix
    present = _printed(cpu) is not None and (numa is None or _printed(numa) is not None)
    notes: list[str] = []
    compared = False
    cpus = cpu_set(_printed(cpu))
    listed = sysfs.cpulist if sysfs else None
    local = cpu_set(listed)
    if cpus is not None and local is not None:
        compared = True
        if not cpus <= local:
            notes.append(f"CPU affinity {cpu} is outside sysfs local_cpulist {listed}")
    shown_numa = _printed(numa)
    if shown_numa is not None and shown_numa.isdigit() and sysfs and sysfs.numa_node is not None:
        compared = True
        if int(shown_numa) != sysfs.numa_node:
            notes.append(f"NUMA affinity {shown_numa} but sysfs numa_node {sysfs.numa_node}")
    group = numa_cpus.get(shown_numa or "", {}) if cpus is not None else {}
    if sum(len(gpus) for gpus in group.values()) > 1:  # other GPUs on this NUMA node
        compared = True
        most = max(len(gpus) for gpus in group.values())
        usual = [c for c, gpus in group.items() if len(gpus) == most]
        if cpus not in usual or len(usual) > 1:  # the odd one out; all of them on a tie
            others = [g for c, gpus in group.items() if c != cpus for g in gpus]
            notes.append(
                f"CPU affinity {cpu} differs from {', '.join(others)} on NUMA node {shown_numa}"
            )
    if not compared:
        return present, None, None
    return present, not notes, "; ".join(notes) or None
