"""Pure: the probe's figures as facts and metrics, with what each link should carry.

Facts per GPU (`gpus[]`, by nvidia-smi index): the measured `h2d_gbs`, `d2h_gbs`,
`local_copy_gbs`, `hbm_gbs` (bytes read and written), `h2d_concurrent_gbs` (all GPUs at
once) and the PCIe expectation: `pcie_theoretical_gbs` of the narrowest link on the GPU's
path (`pcie_gen`, `pcie_width`, `pcie_limit_bus_id`). Per ordered pair (`pairs[]`): the peer
write `gbs` and its path: `via` nvlink with `nvlinks` (the rules multiply by the per-link
rate), or pcie with `pcie_theoretical_gbs` (the narrower GPU's). Per group of GPUs behind
one upstream port (`shared_ports[]`): their concurrent sum against the sum of their figures
alone. The rules (rules/bandwidth.yaml) hold the achievable fractions and the margins.

The multi-GPU phase's NCCL all-reduce (`sitscheck accept`, 2+ GPUs), where there was one:
`nccl` (op, bytes, bus_gbs as nccl-tests counts it, ranks, nvls_disabled), else null.

Decides with no threshold: a copy kernel that did not copy what it read
(`bandwidth.copy_mismatch`, critical). A probe that failed, or stopped before it finished,
makes the check UNKNOWN with its reason (its figures stay in the facts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct, field
from sitscheck.checks.pcie_link.judge import Chain
from sitscheck.contract import CheckOutput
from sitscheck.gpu.view import GpuView
from sitscheck.models import Evidence, Finding, Metric, Severity

from .codes import COPY_MISMATCH_ACTION
from .expect import LinkLimit, narrowest, shared_ports
from .peers import PeerPath
from .record import GpuFigures, Record

SOURCE = "cuda"


class Inputs(Struct, frozen=True):
    """What the judging reads: the probe's record, each UUID's index, sysfs paths, peer paths."""

    record: Record
    ref: str
    indices: Mapping[str, int]  # UUID -> nvidia-smi index
    index_note: str | None  # why UUIDs could not be mapped (the CUDA ordinal is used)
    listed: Sequence[int]  # the indices nvidia-smi lists
    chains: Mapping[str, Chain]  # bus id -> its sysfs path
    paths: Mapping[tuple[int, int], PeerPath] = field(default_factory=dict)
    nccl: dict[str, Any] | None = None  # the multi-GPU phase's all-reduce (multigpu.result)


def judge(inputs: Inputs) -> CheckOutput:
    record = inputs.record
    out = CheckOutput()
    views = {g.ordinal: _view(g, inputs) for g in record.gpus}
    entries: dict[int, dict[str, Any]] = {}
    links: dict[int, list[Any]] = {}
    for figures in record.gpus:
        view = views[figures.ordinal]
        entry, chain = _gpu(figures, view, inputs, out)
        entries[view.index] = entry
        if chain is not None:
            links[view.index] = chain
    _concurrent(record, views, entries, out)
    pairs = _pairs(record, views, entries, inputs, out)
    groups = _shared(links, entries)
    out.facts = {
        "source": "bandwidth.json",
        "ref": inputs.ref,
        "index_source": inputs.index_note or "nvidia-smi -L (UUID)",
        "probe": {
            "elapsed_s": record.elapsed_s,
            "cuda_driver_version": record.cuda_driver_version,
            "device_count": record.device_count,
            "phases_s": record.phases_s,
            "plan": record.plan,
            "stopped": record.stopped,
            "errors": list(record.errors),
        },
        "gpus": [entries[i] for i in sorted(entries)],
        "concurrent_h2d_wall_gbs": record.concurrent_wall_gbs,
        "pairs": pairs,
        "pairs_refused": [
            f"GPU{_index(views, s)}→GPU{_index(views, d)}" for s, d in record.p2p_refused
        ],
        "shared_ports": groups,
        "nccl": inputs.nccl,
    }
    if inputs.nccl is not None:
        out.metrics.append(Metric(name="sitscheck.nccl.allreduce.bus_bandwidth",
                                  value=inputs.nccl["bus_gbs"] * 1e9, unit="By/s",
                                  labels={"ranks": str(inputs.nccl["ranks"])}))  # fmt: skip
    if record.elapsed_s is not None:
        out.metrics.append(Metric(name="sitscheck.bandwidth.probe.duration",
                                  value=record.elapsed_s, unit="s"))  # fmt: skip
    for index in sorted(set(inputs.listed) - set(entries)):
        out.not_judged.append(f"GPU {index}: listed by nvidia-smi but not measured by the probe")
    out.error = _error(record)
    return out


def _view(figures: GpuFigures, inputs: Inputs) -> GpuView:
    index = inputs.indices.get(figures.uuid or "", figures.ordinal)
    data = {"pci_bus_id": figures.pci_bus_id, "name": figures.name, "uuid": figures.uuid}
    return GpuView(index, data, SOURCE, inputs.ref)


def _index(views: Mapping[int, GpuView], ordinal: int) -> int:
    view = views.get(ordinal)
    return view.index if view is not None else ordinal


def _gpu(
    figures: GpuFigures, view: GpuView, inputs: Inputs, out: CheckOutput
) -> tuple[dict[str, Any], list[Any] | None]:
    entry: dict[str, Any] = {
        **view.identity(),
        "ordinal": figures.ordinal,
        "h2d_gbs": figures.h2d_gbs,
        "d2h_gbs": figures.d2h_gbs,
        "local_copy_gbs": figures.local_copy_gbs,
        "hbm_gbs": figures.hbm_gbs,
        "local_verified": figures.local_verified,
    }
    for metric, value, labels in (
        ("sitscheck.gpu.bandwidth", figures.h2d_gbs, {"direction": "host_to_device"}),
        ("sitscheck.gpu.bandwidth", figures.d2h_gbs, {"direction": "device_to_host"}),
        ("sitscheck.gpu.bandwidth", figures.hbm_gbs, {"direction": "device_local"}),
    ):
        if value is not None:
            out.metrics.append(view.metric(metric, value * 1e9, "By/s", mode="alone", **labels))
    if figures.error:
        out.not_judged.append(f"GPU {view.index}: bandwidth: {figures.error}")
    if figures.local_verified is False:
        out.findings.append(_mismatch(view, inputs.ref))
    chain = inputs.chains.get(figures.pci_bus_id or "")
    if not isinstance(chain, list):
        why = chain.path if chain is not None and not isinstance(chain, str) else chain
        out.not_judged.append(
            f"GPU {view.index}: PCIe expectation: its sysfs path could not be read "
            f"({why or 'no bus id'})"
        )
        return entry, None
    limit = narrowest(chain)
    if limit is None:
        out.not_judged.append(f"GPU {view.index}: PCIe expectation: no link speed/width in sysfs")
    else:
        entry.update(_limit_facts("pcie", limit))
    return entry, chain


def _limit_facts(prefix: str, limit: LinkLimit) -> dict[str, Any]:
    return {
        f"{prefix}_gen": limit.gen,
        f"{prefix}_width": limit.width,
        f"{prefix}_theoretical_gbs": limit.theoretical_gbs,
        f"{prefix}_limit_bus_id": limit.bus_id,
    }


def _mismatch(view: GpuView, ref: str) -> Finding:
    return Finding(
        code="bandwidth.copy_mismatch",
        severity=Severity.CRITICAL,
        message=(
            f"GPU {view.index}: a device-local copy left other data than its source "
            "(checked at both ends of the buffer)"
        ),
        device=view.device(),
        evidence=[Evidence(source=SOURCE, ref=ref, excerpt="local_verified: false")],
        action=COPY_MISMATCH_ACTION,
    )


def _concurrent(
    record: Record, views: Mapping[int, GpuView], entries: dict[int, dict[str, Any]],
    out: CheckOutput,
) -> None:  # fmt: skip
    for ordinal, gbs in (record.concurrent_h2d or {}).items():
        view = views.get(ordinal)
        if view is None:
            continue
        entries[view.index]["h2d_concurrent_gbs"] = gbs
        out.metrics.append(
            view.metric("sitscheck.gpu.bandwidth", gbs * 1e9, "By/s",
                        direction="host_to_device", mode="concurrent")
        )  # fmt: skip


def _pairs(
    record: Record,
    views: Mapping[int, GpuView],
    entries: Mapping[int, dict[str, Any]],
    inputs: Inputs,
    out: CheckOutput,
) -> list[dict[str, Any]]:
    pairs = []
    for peer in record.p2p:
        src, dst = _index(views, peer.src), _index(views, peer.dst)
        label = f"GPU{src}→GPU{dst}"
        fact: dict[str, Any] = {"label": label, "src": src, "dst": dst, "gbs": peer.gbs}
        path = inputs.paths.get((min(src, dst), max(src, dst)))
        if path is not None and path.via == "nvlink":
            fact.update(via="nvlink", nvlinks=path.links)
        elif path is not None:
            both = [entries.get(i, {}).get("pcie_theoretical_gbs") for i in (src, dst)]
            known = [b for b in both if isinstance(b, float)]
            fact.update(via="pcie", pcie_theoretical_gbs=min(known) if len(known) == 2 else None)
        if fact.get("nvlinks") is None and fact.get("pcie_theoretical_gbs") is None:
            out.not_judged.append(f"{label} peer write: its NVLink/PCIe path is not known")
        pairs.append(fact)
        view = views.get(peer.src)
        if view is not None:
            out.metrics.append(
                view.metric("sitscheck.gpu.p2p.bandwidth", peer.gbs * 1e9, "By/s", peer=str(dst))
            )
    return pairs


def _shared(
    links: Mapping[int, list[Any]], entries: Mapping[int, dict[str, Any]]
) -> list[dict[str, Any]]:
    groups = []
    for port in shared_ports(links):
        together = _figures(entries, port.gpus, "h2d_concurrent_gbs")
        alone = _figures(entries, port.gpus, "h2d_gbs")
        fact: dict[str, Any] = {
            "port": port.bus_id,
            "gpus": list(port.gpus),
            "label": ", ".join(f"GPU{i}" for i in port.gpus),
        }
        if together is not None and alone is not None and sum(alone) > 0:
            fact["together_gbs"] = round(sum(together), 2)
            fact["alone_sum_gbs"] = round(sum(alone), 2)
            fact["ratio"] = round(fact["together_gbs"] / fact["alone_sum_gbs"], 3)
        if port.limit is not None:
            fact.update(_limit_facts("port", port.limit))
        groups.append(fact)
    return groups


def _figures(
    entries: Mapping[int, dict[str, Any]], gpus: Sequence[int], key: str
) -> list[float] | None:
    """Each GPU's figure under `key`, or None when any of them was not measured."""
    values = [entries[i].get(key) for i in gpus]
    return (
        [v for v in values if isinstance(v, float)]
        if all(isinstance(v, float) for v in values)
        else None
    )


def _error(record: Record) -> str | None:
    problems = list(record.errors)
    if record.stopped:
        problems.append(f"the probe stopped early: {record.stopped}")
    if not record.gpus and not problems:
        problems.append(f"the probe measured no GPU (CUDA devices: {record.device_count})")
    if not problems:
        return None
    return "bandwidth probe: " + "; ".join(problems[:3])
