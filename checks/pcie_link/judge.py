"""Pure: PCIe link facts, metrics and threshold-free findings from the GPU views and sysfs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sitscheck.contract import CheckOutput
from sitscheck.contract.vanished import vanished_finding
from sitscheck.gpu.calls import source_name
from sitscheck.gpu.judging import judge_each
from sitscheck.gpu.readings import number, sample_values, stats
from sitscheck.gpu.view import GpuFleet, GpuView
from sitscheck.models import Evidence, Finding, Severity

from .codes import CODES
from .links import PortLink, Vanished, expected

READ_KEYS = ("pcie",)
SEED_NOTE = "the seed's table: x16 healthy, x8 or lower degraded (Gen4 x8 ≈ 70 % of x16 throughput)"
ACTION = (
    "reseat the GPU (and its riser or cable) and check the slot; look for AER errors on the "
    "upstream port (pcie_aer); if the link stays narrow, replace the riser or RMA the GPU"
)

Chain = list[PortLink] | Vanished | str


def judge(fleet: GpuFleet, chains: Mapping[int, Chain]) -> CheckOutput:
    """`chains`: per GPU index, its sysfs path (root port first) or why it could not be read."""

    def one(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
        evidence = _nvml_link(gpu, entry, out)
        evidence.extend(_sysfs_link(gpu, chains.get(gpu.index), entry, out))
        entry["width_degraded"] = bool(evidence)
        if evidence:
            out.findings.append(_width_finding(gpu, entry, evidence))
        _replay(gpu, entry, out)
        _throughput(gpu, entry, out)

    return judge_each(fleet, "PCIe link", "pcie", READ_KEYS, one)


def _nvml_link(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> list[Evidence]:
    """NVML's (or nvidia-smi's) width and generation; evidence when the width is below max."""
    for name in ("width_current", "width_max", "gen_current", "gen_max", "gen_device_max"):
        value = gpu.get("pcie", name)
        if isinstance(value, int) and not isinstance(value, bool):
            entry[name] = value
    width, width_max = entry.get("width_current"), entry.get("width_max")
    gen, gen_max = entry.get("gen_current"), entry.get("gen_max")
    for label, key, value in (
        ("width", "pcie.width_current", width),
        ("max width", "pcie.width_max", width_max),
        ("generation", "pcie.gen_current", gen),
        ("max generation", "pcie.gen_max", gen_max),
    ):
        if value is None:
            out.not_judged.append(
                f"GPU {gpu.index}: PCIe link {label} ({gpu.source_of(key)}): {gpu.why_missing(key)}"
            )
    if gen is not None and gen_max is not None:
        entry["gen_below_max"] = gen < gen_max
    _link_metrics(gpu, entry, out)
    if width is not None and width_max is not None and width < width_max:
        return [gpu.evidence("pcie.width_current", f"x{width} of x{width_max}")]
    return []


def _sysfs_link(
    gpu: GpuView, chain: Chain | None, entry: dict[str, Any], out: CheckOutput
) -> list[Evidence]:
    if isinstance(chain, Vanished):
        entry["sysfs_vanished"] = chain.bus_id
        out.findings.append(
            vanished_finding(
                codes=CODES,
                code="pcie_link.sysfs_vanished",
                what="PCIe link",
                gpu=gpu.device(),
                bus_id=chain.bus_id,
                folder=chain.path,
            )
        )
        return []
    if chain is None or isinstance(chain, str):
        reason = chain or "no PCI bus id to find it by"
        out.not_judged.append(f"GPU {gpu.index}: sysfs link of the GPU and its ports: {reason}")
        return []
    evidence: list[Evidence] = []
    path: list[dict[str, Any]] = []
    gen_below = entry.get("gen_below_max")
    for position, link in enumerate(chain):
        width_expected = expected(chain, position, "width_max")
        gen_expected = expected(chain, position, "gen_max")
        path.append(
            {
                "bus_id": link.bus_id,
                "role": link.role,
                "width_current": link.width_current,
                "width_max": link.width_max,
                "width_expected": width_expected,
                "gen_current": link.gen_current,
                "gen_max": link.gen_max,
                "gen_expected": gen_expected,
            }
        )
        if link.width_current is not None and width_expected is not None:
            if link.width_current < width_expected:
                evidence.append(
                    Evidence(
                        source="sysfs",
                        ref=f"{link.path}/current_link_width",
                        excerpt=(
                            f"{link.role} {link.bus_id}: x{link.width_current} of x{width_expected}"
                        ),
                    )
                )
        if link.gen_current is not None and gen_expected is not None:
            gen_below = bool(gen_below) or link.gen_current < gen_expected
    entry["path"] = path
    if gen_below is not None:
        entry["gen_below_max"] = gen_below
    if not any(p["width_current"] is not None for p in path):
        out.not_judged.append(f"GPU {gpu.index}: sysfs: no link width files on its path")
    return evidence


def _width_finding(gpu: GpuView, entry: dict[str, Any], evidence: list[Evidence]) -> Finding:
    width, width_max = entry.get("width_current"), entry.get("width_max")
    if not (isinstance(width, int) and isinstance(width_max, int) and width < width_max):
        width, width_max = _first_narrow(entry)
    share = f"{width / width_max:.0%}" if width and width_max else "part"
    where = "; ".join(f"{e.source}: {e.excerpt}" for e in evidence if e.excerpt)
    return Finding(
        code="pcie_link.width_degraded",
        severity=Severity.WARNING,
        message=(
            f"GPU {gpu.index} ({gpu.pci_bus_id or 'bus id unknown'}): PCIe link runs "
            f"x{width} of x{width_max}, {share} of its bandwidth ({where}); {SEED_NOTE}"
        ),
        device=gpu.device(),
        evidence=evidence,
        action=ACTION,
    )


def _first_narrow(entry: dict[str, Any]) -> tuple[int | None, int | None]:
    for link in entry.get("path") or []:
        current, wanted = link.get("width_current"), link.get("width_expected")
        if isinstance(current, int) and isinstance(wanted, int) and current < wanted:
            return current, wanted
    return None, None


def _link_metrics(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    for metric, unit, prefix in (
        ("sitscheck.pcie.link.width", "{lane}", "width"),
        ("sitscheck.pcie.link.generation", "{generation}", "gen"),
    ):
        for state in ("current", "max"):
            value = entry.get(f"{prefix}_{state}")
            if isinstance(value, int):
                out.metrics.append(gpu.metric(metric, value, unit, state=state))


def _replay(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    start = number(gpu.get("pcie", "replay_counter_start"))
    end = number(gpu.get("pcie", "replay_counter_end"))
    total = end if end is not None else start
    if total is None:
        out.not_judged.append(
            f"GPU {gpu.index}: PCIe replay counter: {gpu.why_missing('pcie.replay')}"
        )
        return
    entry["replay_count"] = int(total)
    out.metrics.append(
        gpu.metric("hw.errors", total, "{error}", **{"error.type": "pcie_replay", "hw.type": "gpu"})
    )
    if start is None or end is None or gpu.counter_window_s is None:
        out.not_judged.append(
            f"GPU {gpu.index}: PCIe replay rate: needs the counter read at both ends of a "
            f"sampling window (NVML); {source_name(gpu.source_of('pcie.replay'))} gave one reading"
        )
        return
    delta = max(end - start, 0.0)
    entry["replay_delta"] = int(delta)
    window, why_not = gpu.rate_window_s()
    if window is None:
        out.not_judged.append(f"GPU {gpu.index}: PCIe replay rate: {why_not}")
        return
    entry["replay_window_s"] = window
    entry["replay_per_min"] = round(delta * 60.0 / window, 3)
    rate = round(delta / window, 6)
    out.metrics.append(gpu.metric("sitscheck.pcie.replay.rate", rate, "{replay}/s"))


def _throughput(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    for name, key, direction in (
        ("pcie_tx_kbps", "tx_bytes_per_s", "transmit"),
        ("pcie_rx_kbps", "rx_bytes_per_s", "receive"),
    ):
        summary = stats(v * 1000.0 for v in sample_values(gpu, name))
        if summary is None:
            why = gpu.why_missing("pcie.tx" if direction == "transmit" else "pcie.rx")
            out.not_judged.append(f"GPU {gpu.index}: PCIe {direction} throughput: {why}")
            continue
        entry[key] = summary
        for stat, value in summary.items():
            out.metrics.append(
                gpu.metric(
                    "hw.gpu.io", value, "By/s", **{"network.io.direction": direction, "stat": stat}
                )
            )
