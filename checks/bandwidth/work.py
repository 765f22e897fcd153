"""The `bandwidth` check once it runs: the probe's record, nvidia-smi -L, sysfs, NVML and the
multi-GPU phase's all-reduce (accept/multigpu.json, `sitscheck accept` on 2+ GPUs) → judge
(imported by `impl` only then: a run without --bandwidth skips it unread)."""

from __future__ import annotations

from sitscheck.checks.multigpu.result import read_nccl
from sitscheck.checks.pcie_link.impl import read_chain
from sitscheck.checks.pcie_link.judge import Chain
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.probes.bandwidth import BANDWIDTH_JSON
from sitscheck.smi.list_gpus import parse_list_gpus
from sitscheck.smi.values import SmiParseError
from sitscheck.sources import artifacts as names
from sitscheck.sources.base import Sources

from .judge import Inputs, judge
from .peers import peer_paths
from .record import RecordError, parse_record


def collect(ctx: CheckContext) -> CheckOutput:
    artifact = ctx.sources.artifact(BANDWIDTH_JSON)
    if artifact.text is None:
        return CheckOutput(error=f"bandwidth probe: {artifact.reason}")
    try:
        record = parse_record(artifact.text)
    except RecordError as exc:
        return CheckOutput(error=f"{artifact.ref}: {exc}")
    ctx.ensure_time("reading the GPUs' PCIe paths")
    indices, listed, note = _listing(ctx.sources)
    chains: dict[str, Chain] = {
        g.pci_bus_id: read_chain(ctx.sources.sysfs, g.pci_bus_id)
        for g in record.gpus
        if g.pci_bus_id
    }
    snapshot = ctx.sources.gpu_snapshot()[0] if record.p2p else None
    inputs = Inputs(record, artifact.ref, indices, note, listed, chains, peer_paths(snapshot),
                    read_nccl(ctx.sources))  # fmt: skip
    return judge(inputs)


def _listing(sources: Sources) -> tuple[dict[str, int], list[int], str | None]:
    """UUID -> nvidia-smi index (the index every other check reports), or why not."""
    artifact = sources.artifact(names.NVIDIA_SMI_L)
    if artifact.text is None:
        return {}, [], f"CUDA ordinal (PCI bus order): {artifact.reason}"
    try:
        listing = parse_list_gpus(artifact.text)
    except SmiParseError as exc:
        return {}, [], f"CUDA ordinal (PCI bus order): {artifact.ref}: {exc}"
    indices = {g.uuid: g.index for g in listing.gpus if g.uuid}
    return indices, [g.index for g in listing.gpus], None
