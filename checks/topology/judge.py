"""Pure: the topology facts from ``nvidia-smi topo -m`` and NVML, and what they say by themselves.

No I/O and no thresholds. The check hands in the parsed matrix (or None), the NVML view taken
from the snapshot (or None), the GPU indices ``nvidia-smi -L`` lists when NVML could not be
read, and each GPU's sysfs NUMA node and local CPU list; :func:`judge` hands back the facts the
rules read and the findings that need no profile:

- ``topology.unparsable`` (unknown): the topo text holds no matrix (file:line).
- ``topology.gpu_missing`` (critical): a GPU the driver lists is not in the matrix.
- ``topology.asymmetric`` (warning): a cell a→b differs from b→a.
- ``topology.nvml_disagrees`` (warning): the matrix and NVML disagree about a GPU pair or
  about which GPUs exist (`pairs.py`).

Per GPU facts are `per_gpu.py`'s; the inputs and the NVML view `inputs.py`'s.
"""

from __future__ import annotations

from typing import Any

from msgspec import Struct
from sitscheck.models import Evidence, Finding, Severity

from .inputs import (
    EXCERPT,
    NVML,
    TOPO,
    NvmlGpu,
    NvmlPair,
    NvmlView,
    SysfsAffinity,
    TopologyInputs,
    gpu_device,
    nvml_view,
    topo_evidence,
)
from .pairs import Pair, disagreements, matrix_cells, pairs_of, unlisted
from .parse import TopoMatrix, TopoParseError
from .per_gpu import cpu_set, per_gpu

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


class Judgement(Struct):
    """The topology check's facts, findings, and what it could not judge."""

    facts: dict[str, Any]
    findings: list[Finding]
    not_judged: list[str]


def unparsable(error: TopoParseError, ref: str, text: str) -> Finding:
    """The finding for topo text that holds no matrix: UNKNOWN, naming file:line."""
    lines = text.splitlines()
    line = lines[error.line_number - 1] if 0 < error.line_number <= len(lines) else ""
    return Finding(
        code="topology.unparsable",
        severity=Severity.UNKNOWN,
        message=f"{ref}:{error.line_number}: {error.message}",
        evidence=[Evidence(source=TOPO, ref=f"{ref}:{error.line_number}", excerpt=line[:EXCERPT])],
        action=(
            "run `nvidia-smi topo -m` by hand: an error text instead of a matrix means the "
            "driver did not answer (check `nvidia-smi` and the kernel log)"
        ),
    )


def judge(inputs: TopologyInputs) -> Judgement:
    matrix, nvml = inputs.matrix, inputs.nvml
    topo_indices = _topo_indices(matrix)
    nvml_indices = [g.index for g in nvml.gpus] if nvml else []
    indices = sorted(set(topo_indices) | set(nvml_indices))
    pairs = pairs_of(matrix, nvml, indices)
    findings: list[Finding] = []
    not_judged: list[str] = []
    if matrix is not None:
        findings.extend(_asymmetric(matrix, inputs, nvml))
        findings.extend(_missing(topo_indices, inputs, not_judged))
    if matrix is not None and nvml is not None:
        findings.extend(unlisted(topo_indices, nvml, inputs))
        findings.extend(disagreements(pairs, nvml, inputs))
    gpus = per_gpu(indices, matrix, nvml, pairs, inputs.sysfs, topo_indices)
    topo_fact = matrix.to_fact() if matrix else _empty_topo_fact()
    gpu_count = len(topo_indices) if matrix is not None else len(nvml_indices)
    facts: dict[str, Any] = {
        **topo_fact,
        "source": {"topo": inputs.topo_ref if matrix else None, "nvml": nvml.ref if nvml else None},
        "summary": _summary(gpu_count, matrix, pairs, findings),
        "pairs": [p.fact() for p in pairs],
        "per_gpu": gpus,
    }
    return Judgement(facts, findings, not_judged)


def _empty_topo_fact() -> dict[str, Any]:
    return {"gpus": [], "nics": [], "nic_legend": {}, "links": [], "affinity": {}}


def _topo_indices(matrix: TopoMatrix | None) -> list[int]:
    return [int(name[3:]) for name in matrix.gpus] if matrix else []


def _asymmetric(matrix: TopoMatrix, inputs: TopologyInputs, nvml: NvmlView | None) -> list[Finding]:
    cells = matrix_cells(matrix)
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
        device = gpu_device(int(a[3:]), nvml) if a.startswith("GPU") else None
        findings.append(
            Finding(
                code="topology.asymmetric",
                severity=Severity.WARNING,
                message=(
                    f"the topology matrix is not symmetric: {a}→{b} reads {kind}, "
                    f"{b}→{a} reads {reverse}"
                ),
                device=device,
                evidence=[topo_evidence(inputs, f"{a}→{b} {kind}; {b}→{a} {reverse}")],
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
    source = "nvidia-smi -L" if inputs.nvml is None else NVML
    shown = ", ".join(f"GPU{i}" for i in topo_indices) or "no GPU"
    return [
        Finding(
            code="topology.gpu_missing",
            severity=Severity.CRITICAL,
            message=f"GPU {index} is listed by {source} but missing from the topology matrix",
            device=gpu_device(index, inputs.nvml),
            evidence=[
                topo_evidence(inputs, f"matrix shows {shown}"),
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


# --- summary ------------------------------------------------------------------------------


def _summary(
    gpu_count: int,
    matrix: TopoMatrix | None,
    pairs: list[Pair],
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
