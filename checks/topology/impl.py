"""The work of the `topology` check: sources → parse + NVML view → judge → result."""

from __future__ import annotations

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.gpu.calls import NVML
from sitscheck.models import Finding, Metric
from sitscheck.smi.list_gpus import parse_list_gpus
from sitscheck.smi.values import SmiParseError
from sitscheck.sources import artifacts as names
from sitscheck.sources.base import Artifact, Sources
from sitscheck.sources.files import FileTree
from sitscheck.sources.pci import device_path

from .judge import NvmlView, SysfsAffinity, TopologyInputs, judge, nvml_view, unparsable
from .parse import TopoMatrix, TopoParseError, parse_topo


class TopologyImpl:
    """The work behind `TopologyCheck` (imported only when the check runs)."""

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        """Skipped without a driver, or a bundle that holds neither topo -m nor nvml.json.

        Live, nothing is run here (a hung nvidia-smi would hold up every check's start): a
        node with a driver whose topo -m and NVML both fail is UNKNOWN, from `collect`.
        """
        driver = sources.driver()
        if driver.state != "present":
            return driver.detail
        if sources.mode == "live":
            return None
        topo = sources.artifact(names.NVIDIA_SMI_TOPO)
        snapshot, reason = (None, None) if topo.available else sources.gpu_snapshot()
        if topo.available or snapshot is not None:
            return None
        return f"no topology evidence: {topo.reason}; NVML: {reason}"

    def collect(self, ctx: CheckContext) -> CheckOutput:
        sources = ctx.sources
        topo = sources.artifact(names.NVIDIA_SMI_TOPO)
        ctx.ensure_time("reading NVML")
        snapshot, nvml_reason = sources.gpu_snapshot()
        nvml = nvml_view(snapshot, NVML) if snapshot is not None else None
        nvml_why = nvml_reason or (snapshot or {}).get("error") or "no GPUs"
        if topo.text is None and nvml is None:
            return CheckOutput(error=f"no topology evidence: {topo.reason}; NVML: {nvml_why}")
        matrix, parse_finding = _parse(topo)
        not_judged: list[str] = []
        if topo.text is None:
            not_judged.append(
                f"nvidia-smi topo -m: {topo.reason}; NIC placement, CPU/NUMA affinity and "
                "NVLink counts per pair not judged (NVML's view reported alone)"
            )
        if nvml is None:
            not_judged.append(f"NVML: {nvml_why}; the matrix is not cross-checked with NVML")
        listed, listed_ref = (None, None) if nvml is not None else _listed(sources)
        judgement = judge(
            TopologyInputs(
                matrix=matrix,
                topo_ref=topo.ref,
                nvml=nvml,
                listed=listed,
                listed_ref=listed_ref,
                sysfs=_sysfs_affinity(sources.sysfs, nvml),
            )
        )
        findings = ([parse_finding] if parse_finding else []) + judgement.findings
        summary = judgement.facts["summary"]
        return CheckOutput(
            findings=findings,
            metrics=[
                Metric(name="sitscheck.topology.gpus", value=summary["gpu_count"], unit="{gpu}"),
                Metric(
                    name="sitscheck.topology.nvlink_pairs",
                    value=summary["nvlink_pairs"],
                    unit="{pair}",
                ),
                Metric(
                    name="sitscheck.topology.pcie_only_pairs",
                    value=summary["pcie_only_pairs"],
                    unit="{pair}",
                ),
            ],
            facts=judgement.facts,
            not_judged=not_judged + judgement.not_judged,
        )


def _parse(topo: Artifact) -> tuple[TopoMatrix | None, Finding | None]:
    if topo.text is None:
        return None, None
    try:
        return parse_topo(topo.text), None
    except TopoParseError as exc:
        return None, unparsable(exc, topo.ref, topo.text)


def _listed(sources: Sources) -> tuple[tuple[int, ...] | None, str | None]:
    """GPU indices `nvidia-smi -L` lists, when NVML could not be read."""
    listing = sources.artifact(names.NVIDIA_SMI_L)
    if listing.text is None:
        return None, None
    try:
        parsed = parse_list_gpus(listing.text)
    except SmiParseError:
        return None, None
    return tuple(g.index for g in parsed.gpus), listing.ref


def _sysfs_affinity(sysfs: FileTree, nvml: NvmlView | None) -> dict[int, SysfsAffinity]:
    """Each NVML GPU's sysfs `numa_node` (-1 read as unknown) and `local_cpulist`."""
    found: dict[int, SysfsAffinity] = {}
    for gpu in nvml.gpus if nvml else ():
        path = device_path(sysfs, gpu.pci_bus_id) if gpu.pci_bus_id else None
        if path is None:
            continue
        numa = (sysfs.read_text(f"{path}/numa_node") or "").strip()
        cpulist = (sysfs.read_text(f"{path}/local_cpulist") or "").strip()
        node = int(numa) if numa.lstrip("-").isdigit() else None
        found[gpu.index] = SysfsAffinity(
            numa_node=node if node is not None and node >= 0 else None,
            cpulist=cpulist or None,
        )
    return found
