"""Pure: the topology facts from ``nvidia-smi topo -m`` and NVML, and what they say by themselves.

No I/O and no thresholds. The check hands in the parsed matrix (or None), the NVML view taken
from the snapshot (or None), the GPU indices ``nvidia-smi -L`` lists when NVML could not be
read, and each GPU's sysfs NUMA node and local CPU list; :func:`judge` hands back the facts the
rules read and the findings that need no profile:

- ``topology.unparsable`` (unknown): the topo text holds no matrix (file:line).
- ``topology.gpu_missing`` (critical): a GPU the driver lists is not in the matrix.
- ``topology.asymmetric`` (warning): a cell a→b differs from b→a.
- ``topology.nvml_disagrees`` (warning): the matrix and NVML disagree about a GPU pair (NVLink
  P2P, PCIe common ancestor, active NVLink count) or about which GPUs exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from msgspec import Struct, field
from sitscheck.gpu.fleet import from_snapshot
from sitscheck.gpu.view import GpuView
from sitscheck.models import Device, Evidence, Finding, Severity

from .parse import TopoMatrix, TopoParseError, is_pcie_kind, nvlink_count

__all__ = [
    "Judgement",
    "NvmlGpu",
    "NvmlPair",
    "NvmlView",
    "SysfsAffinity",
    "TopologyInputs",
    "cpu_set",
    "judge",
    "nvml_view",
    "unparsable",
]

# PCIe path kinds from nearest to farthest (nvidia-smi's legend order).
_PCIE_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "NODE": 3, "SYS": 4, "SOC": 4}  # SOC: old SYS
# nvmlDeviceGetTopologyCommonAncestor levels (as the snapshot names them) → the topo -m kind.
# "internal" (two GPUs of one board, e.g. K80) has no topo -m counterpart and is not compared.
_ANCESTOR_KIND = {
    "single": "PIX",
    "multiple": "PXB",
    "hostbridge": "PHB",
    "node": "NODE",
    "system": "SYS",
}
_TOPO = "nvidia-smi topo -m"
_NVML = "nvml"
_EXCERPT = 2000


# --- inputs -------------------------------------------------------------------------------


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


class Judgement(Struct):
    """The topology check's facts, findings, and what it could not judge."""

    facts: dict[str, Any]
    findings: list[Finding]
    not_judged: list[str]


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


def unparsable(error: TopoParseError, ref: str, text: str) -> Finding:
    """The finding for topo text that holds no matrix: UNKNOWN, naming file:line."""
    lines = text.splitlines()
    line = lines[error.line_number - 1] if 0 < error.line_number <= len(lines) else ""
    return Finding(
        code="topology.unparsable",
        severity=Severity.UNKNOWN,
        message=f"{ref}:{error.line_number}: {error.message}",
        evidence=[
            Evidence(source=_TOPO, ref=f"{ref}:{error.line_number}", excerpt=line[:_EXCERPT])
        ],
        action=(
            "run `nvidia-smi topo -m` by hand: an error text instead of a matrix means the "
            "driver did not answer (check `nvidia-smi` and the kernel log)"
        ),
    )


# --- the judgement ------------------------------------------------------------------------


class _Pair(Struct):
    """One GPU pair being judged: the matrix's cells both ways, and NVML's view of it."""

    a: int
    b: int
    kind: str | None  # topo cell a→b as printed
    reverse_kind: str | None  # topo cell b→a
    nvml: NvmlPair | None

    @property
    def kinds(self) -> list[str]:
        return [k for k in (self.kind, self.reverse_kind) if k is not None]

    @property
    def topo_nvlink(self) -> int | None:
        """NVLinks the matrix shows (the fewer of both directions); 0 on a PCIe path."""
        kinds = self.kinds
        if any(is_pcie_kind(k) for k in kinds):
            return 0
        counts = [nvlink_count(k) for k in kinds]
        if counts and all(c is not None for c in counts):
            return min(c for c in counts if c is not None)
        return None

    @property
    def on_nvlink(self) -> bool | None:
        """From the matrix when it says (NV# or a PCIe kind), else NVML's P2P status."""
        count = self.topo_nvlink
        if count is not None:
            return count > 0
        return self.nvml.p2p_nvlink if self.nvml else None

    @property
    def label(self) -> str:
        names = f"GPU{self.a}–GPU{self.b}"
        kinds = self.kinds
        if kinds:
            return f"{names} {'/'.join(dict.fromkeys(kinds))}"
        if self.nvml is None or self.nvml.p2p_nvlink is None:
            return f"{names} (no topology evidence)"
        if self.nvml.p2p_nvlink:
            return f"{names} (NVML: NVLink P2P)"
        return f"{names} (NVML: no NVLink P2P, common ancestor {self.nvml.common_ancestor})"

    def fact(self) -> dict[str, Any]:
        return {
            "a": f"GPU{self.a}",
            "b": f"GPU{self.b}",
            "a_index": self.a,
            "b_index": self.b,
            "kind": self.kind,
            "reverse_kind": self.reverse_kind,
            "nvlink": self.topo_nvlink,
            "on_nvlink": self.on_nvlink,
            "nvml_p2p_nvlink": self.nvml.p2p_nvlink if self.nvml else None,
            "nvml_common_ancestor": self.nvml.common_ancestor if self.nvml else None,
            "label": self.label,
        }


def judge(inputs: TopologyInputs) -> Judgement:
    matrix, nvml = inputs.matrix, inputs.nvml
    topo_indices = _topo_indices(matrix)
    nvml_indices = [g.index for g in nvml.gpus] if nvml else []
    indices = sorted(set(topo_indices) | set(nvml_indices))
    pairs = _pairs(matrix, nvml, indices)
    findings: list[Finding] = []
    not_judged: list[str] = []
    if matrix is not None:
        findings.extend(_asymmetric(matrix, inputs, nvml))
        findings.extend(_missing(topo_indices, inputs, not_judged))
    if matrix is not None and nvml is not None:
        findings.extend(_unlisted(topo_indices, nvml, inputs))
        findings.extend(_disagreements(pairs, nvml, inputs))
    per_gpu = _per_gpu(indices, matrix, nvml, pairs, inputs.sysfs, topo_indices)
    topo_fact = matrix.to_fact() if matrix else _empty_topo_fact()
    gpu_count = len(topo_indices) if matrix is not None else len(nvml_indices)
    facts: dict[str, Any] = {
        **topo_fact,
        "source": {"topo": inputs.topo_ref if matrix else None, "nvml": nvml.ref if nvml else None},
        "summary": _summary(gpu_count, matrix, pairs, findings),
        "pairs": [p.fact() for p in pairs],
        "per_gpu": per_gpu,
    }
    return Judgement(facts, findings, not_judged)


def _empty_topo_fact() -> dict[str, Any]:
    return {"gpus": [], "nics": [], "nic_legend": {}, "links": [], "affinity": {}}


def _topo_indices(matrix: TopoMatrix | None) -> list[int]:
    return [int(name[3:]) for name in matrix.gpus] if matrix else []


def _pairs(matrix: TopoMatrix | None, nvml: NvmlView | None, indices: list[int]) -> list[_Pair]:
    cells = _cells(matrix)
    pairs = []
    for position, a in enumerate(indices):
        for b in indices[position + 1 :]:
            kind = cells.get((f"GPU{a}", f"GPU{b}"))
            reverse = cells.get((f"GPU{b}", f"GPU{a}"))
            nvml_pair = nvml.pair(a, b) if nvml else None
            if kind is None and reverse is None and nvml_pair is None:
                continue
            pairs.append(_Pair(a, b, kind, reverse, nvml_pair))
    return pairs


def _cells(matrix: TopoMatrix | None) -> dict[tuple[str, str], str]:
    return {(link.a, link.b): link.kind for link in matrix.links} if matrix else {}


def _gpu_device(index: int, nvml: NvmlView | None) -> Device:
    gpu = nvml.gpu(index) if nvml else None
    return Device(index=index, pci_bus_id=gpu.pci_bus_id if gpu else None)


def _topo_evidence(inputs: TopologyInputs, excerpt: str) -> Evidence:
    return Evidence(source=_TOPO, ref=inputs.topo_ref, excerpt=excerpt[:_EXCERPT])


def _asymmetric(matrix: TopoMatrix, inputs: TopologyInputs, nvml: NvmlView | None) -> list[Finding]:
    cells = _cells(matrix)
    findings = []
    seen: set[frozenset[str]] = set()
    for (a, b), kind in cells.items():
        key = frozenset((a, b))
        reverse = cells.get((b, a))
        if key in seen or reverse is None:
            continue
        seen.add(key)
        if reverse == kind:
            continue
        device = _gpu_device(int(a[3:]), nvml) if a.startswith("GPU") else None
        findings.append(
            Finding(
                code="topology.asymmetric",
                severity=Severity.WARNING,
                message=(
                    f"the topology matrix is not symmetric: {a}→{b} reads {kind}, "
                    f"{b}→{a} reads {reverse}"
                ),
                device=device,
                evidence=[_topo_evidence(inputs, f"{a}→{b} {kind}; {b}→{a} {reverse}")],
                action=(
                    "the two ends see the link differently (a link trained on one side only): "
                    "run `nvidia-smi nvlink -s` on both GPUs, reset them or reboot; if it "
                    "persists, drain the node for hardware inspection"
                ),
            )
        )
    return findings


def _expected_gpus(inputs: TopologyInputs, not_judged: list[str]) -> tuple[list[int], str | None]:
    """GPU indices the driver lists (NVML, else nvidia-smi -L); lost GPUs are not expected."""
    if inputs.nvml is not None:
        lost = [g.index for g in inputs.nvml.gpus if g.lost]
        if lost:
            not_judged.append(
                f"GPU {', '.join(map(str, lost))} lost (see the driver check): "
                "not expected in the topology matrix"
            )
        return [g.index for g in inputs.nvml.gpus if not g.lost], inputs.nvml.ref
    if inputs.listed is not None:
        return list(inputs.listed), inputs.listed_ref
    not_judged.append(
        "no GPU list (NVML or nvidia-smi -L): a GPU missing from the matrix is not seen"
    )
    return [], None


def _missing(
    topo_indices: list[int], inputs: TopologyInputs, not_judged: list[str]
) -> list[Finding]:
    expected, ref = _expected_gpus(inputs, not_judged)
    source = "nvidia-smi -L" if inputs.nvml is None else _NVML
    shown = ", ".join(f"GPU{i}" for i in topo_indices) or "no GPU"
    return [
        Finding(
            code="topology.gpu_missing",
            severity=Severity.CRITICAL,
            message=f"GPU {index} is listed by {source} but missing from the topology matrix",
            device=_gpu_device(index, inputs.nvml),
            evidence=[
                _topo_evidence(inputs, f"matrix shows {shown}"),
                Evidence(source=source, ref=ref),
            ],
            action=(
                "the driver cannot place this GPU: check the kernel log for Xid 79/AER on its "
                "bus, `nvidia-smi -q -i N`; reset or reseat the GPU"
            ),
        )
        for index in expected
        if index not in topo_indices
    ]


def _unlisted(topo_indices: list[int], nvml: NvmlView, inputs: TopologyInputs) -> list[Finding]:
    known = {g.index for g in nvml.gpus}
    return [
        _disagreement(
            f"GPU{index} is in the topology matrix but NVML does not list it",
            None,
            inputs,
            f"GPU{index} row",
            "nvmlDeviceGetCount",
        )
        for index in topo_indices
        if index not in known
    ]


def _disagreement(
    message: str, device: Device | None, inputs: TopologyInputs, excerpt: str, call: str
) -> Finding:
    nvml_ref = inputs.nvml.ref if inputs.nvml else None
    return Finding(
        code="topology.nvml_disagrees",
        severity=Severity.WARNING,
        message=message,
        device=device,
        evidence=[
            _topo_evidence(inputs, excerpt),
            Evidence(source=_NVML, ref=f"{nvml_ref}: {call}" if nvml_ref else call),
        ],
        action=(
            "the two views of one fabric disagree (a link flapping, or the fabric manager "
            "changing state): rerun; check `nvidia-smi nvlink -s`, `nvidia-smi -q | grep -A2 "
            "Fabric` and the fabric manager log"
        ),
    )


def _disagreements(pairs: list[_Pair], nvml: NvmlView, inputs: TopologyInputs) -> list[Finding]:
    findings = []
    for pair in pairs:
        if not pair.kinds:
            continue  # a GPU missing from the matrix: reported apart
        reasons, calls = _pair_reasons(pair, nvml)
        if reasons:
            findings.append(
                _disagreement(
                    f"GPU{pair.a}–GPU{pair.b}: " + "; ".join(reasons),
                    _gpu_device(pair.a, nvml),
                    inputs,
                    pair.label,
                    ", ".join(calls),
                )
            )
    return findings


def _pair_reasons(pair: _Pair, nvml: NvmlView) -> tuple[list[str], list[str]]:
    reasons: list[str] = []
    calls: list[str] = []
    shown = "/".join(dict.fromkeys(pair.kinds))
    count = pair.topo_nvlink
    p2p = pair.nvml.p2p_nvlink if pair.nvml else None
    if count is not None and p2p is not None and (count > 0) != p2p:
        said = "NVLink P2P" if p2p else "no NVLink P2P"
        reasons.append(f"topo -m shows {shown} but NVML reports {said}")
        calls.append("nvmlDeviceGetP2PStatus(NVLINK)")
    ancestor = pair.nvml.common_ancestor if pair.nvml else None
    expected_kind = _ANCESTOR_KIND.get(ancestor or "")
    pcie_kinds = [k for k in pair.kinds if is_pcie_kind(k)]
    same = {"SOC": "SYS"}  # drivers before 2017 printed SYS as SOC
    if expected_kind and pcie_kinds and any(same.get(k, k) != expected_kind for k in pcie_kinds):
        reasons.append(
            f"topo -m shows {'/'.join(dict.fromkeys(pcie_kinds))} but NVML's common ancestor "
            f"is {ancestor} ({expected_kind})"
        )
        calls.append("nvmlDeviceGetTopologyCommonAncestor")
    if count:
        for index in (pair.a, pair.b):
            reason = _link_count_reason(index, pair, count, nvml)
            if reason:
                reasons.append(reason)
                calls.append("nvmlDeviceGetNvLinkState/RemotePciInfo")
    return reasons, calls


def _link_count_reason(index: int, pair: _Pair, count: int, nvml: NvmlView) -> str | None:
    gpu = nvml.gpu(index)
    if gpu is None or gpu.nvlink_active is None or gpu.nvlink_unknown:
        return None
    if gpu.nvlink_active < count:
        active = gpu.nvlink_active
        return f"topo -m shows NV{count} but NVML sees {active} active NVLinks on GPU{index}"
    peer = nvml.gpu(pair.b if index == pair.a else pair.a)
    direct = _direct_links(gpu, nvml)
    if direct is None or peer is None or peer.pci_bus_id is None:
        return None
    links = direct.get(peer.pci_bus_id, 0)
    if links != count:
        return (
            f"topo -m shows NV{count} but GPU{index} has {links} active NVLinks to GPU{peer.index}"
        )
    return None


def _direct_links(gpu: NvmlGpu, nvml: NvmlView) -> dict[str, int] | None:
    """Active links per peer GPU bus id when every link ends at a GPU NVML lists (no NVSwitch)."""
    peers = {g.pci_bus_id for g in nvml.gpus if g.pci_bus_id}
    if not gpu.remotes or any(remote not in peers for remote in gpu.remotes):
        return None
    counts: dict[str, int] = {}
    for remote in gpu.remotes:
        if remote is not None:
            counts[remote] = counts.get(remote, 0) + 1
    return counts


# --- per GPU ------------------------------------------------------------------------------


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


def _per_gpu(
    indices: list[int],
    matrix: TopoMatrix | None,
    nvml: NvmlView | None,
    pairs: list[_Pair],
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
    cells = _cells(matrix)
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


# --- summary ------------------------------------------------------------------------------


def _summary(
    gpu_count: int,
    matrix: TopoMatrix | None,
    pairs: list[_Pair],
    findings: list[Finding],
) -> dict[str, Any]:
    counts = [p.topo_nvlink for p in pairs if p.topo_nvlink]
    return {
        "gpu_count": gpu_count,
        "nic_count": len(matrix.nics) if matrix else 0,
        "pair_count": len(pairs),
        "nvlink_pairs": sum(1 for p in pairs if p.on_nvlink is True),
        "pcie_only_pairs": sum(1 for p in pairs if p.on_nvlink is False),
        "unknown_pairs": sum(1 for p in pairs if p.on_nvlink is None),
        "min_nvlink": min(counts) if counts else None,
        "max_nvlink": max(counts) if counts else None,
        "asymmetric": sum(1 for f in findings if f.code == "topology.asymmetric"),
        "nvml_disagreements": sum(1 for f in findings if f.code == "topology.nvml_disagrees"),
        "missing_gpus": [
            f.device.index
            for f in findings
            if f.code == "topology.gpu_missing" and f.device and f.device.index is not None
        ],
    }
