"""The GPU pairs of the topology: what the matrix and NVML say of each, and where they disagree.

- ``topology.nvml_disagrees`` (warning): the matrix and NVML disagree about a GPU pair (NVLink
  P2P, PCIe common ancestor, active NVLink count) or about which GPUs exist.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct
from sitscheck.models import Device, Evidence, Finding, Severity

from .inputs import NVML, NvmlGpu, NvmlPair, NvmlView, TopologyInputs, gpu_device, topo_evidence
from .parse import TopoMatrix, is_pcie_kind, nvlink_count

# nvmlDeviceGetTopologyCommonAncestor levels (as the snapshot names them) → the topo -m kind.
# "internal" (two GPUs of one board, e.g. K80) has no topo -m counterpart and is not compared.
_ANCESTOR_KIND = {
    "single": "PIX",
    "multiple": "PXB",
    "hostbridge": "PHB",
    "node": "NODE",
    "system": "SYS",
}


class Pair(Struct):
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


def pairs_of(matrix: TopoMatrix | None, nvml: NvmlView | None, indices: list[int]) -> list[Pair]:
    cells = matrix_cells(matrix)
    pairs = []
    for position, a in enumerate(indices):
        for b in indices[position + 1 :]:
            kind = cells.get((f"GPU{a}", f"GPU{b}"))
            reverse = cells.get((f"GPU{b}", f"GPU{a}"))
            nvml_pair = nvml.pair(a, b) if nvml else None
            if kind is None and reverse is None and nvml_pair is None:
                continue
            pairs.append(Pair(a, b, kind, reverse, nvml_pair))
    return pairs


def matrix_cells(matrix: TopoMatrix | None) -> dict[tuple[str, str], str]:
    return {(link.a, link.b): link.kind for link in matrix.links} if matrix else {}


def unlisted(topo_indices: list[int], nvml: NvmlView, inputs: TopologyInputs) -> list[Finding]:
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
            topo_evidence(inputs, excerpt),
            Evidence(source=NVML, ref=f"{nvml_ref}: {call}" if nvml_ref else call),
        ],
        action=(
            "the two views of one fabric disagree (a link flapping, or the fabric manager "
            "changing state): rerun; check `nvidia-smi nvlink -s`, `nvidia-smi -q | grep -A2 "
            "Fabric` and the fabric manager log"
        ),
    )


def disagreements(pairs: list[Pair], nvml: NvmlView, inputs: TopologyInputs) -> list[Finding]:
    findings = []
    for pair in pairs:
        if not pair.kinds:
            continue  # a GPU missing from the matrix: reported apart
        reasons, calls = _pair_reasons(pair, nvml)
        if reasons:
            findings.append(
                _disagreement(
                    f"GPU{pair.a}–GPU{pair.b}: " + "; ".join(reasons),
                    gpu_device(pair.a, nvml),
                    inputs,
                    pair.label,
                    ", ".join(calls),
                )
            )
    return findings


def _pair_reasons(pair: Pair, nvml: NvmlView) -> tuple[list[str], list[str]]:
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


def _link_count_reason(index: int, pair: Pair, count: int, nvml: NvmlView) -> str | None:
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
