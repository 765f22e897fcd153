"""Pure: NVLink state and error-counter facts, metrics and findings from the GPU views."""

from __future__ import annotations

from typing import Any

from sitscheck.contract import CheckOutput
from sitscheck.gpu.calls import NVML, source_name
from sitscheck.gpu.judging import FleetCheck, judge_each
from sitscheck.gpu.readings import number
from sitscheck.gpu.view import GpuFleet, GpuView
from sitscheck.models import Finding, Severity

READ_KEYS = ("nvlink",)
COUNTERS = ("replay", "recovery", "crc_flit", "crc_data")
# Counters whose every increment is a fault (DCGM fails a GPU on one replay or recovery);
# CRC counters are judged by their rate (rules: nvlink.crc_rate).
ALWAYS_BAD = ("replay", "recovery")
INACTIVE_ACTION = (
    "check the GPU's NVLink/NVSwitch fabric (nvidia-smi nvlink -s, fabric manager log, "
    "kernel log for Xid 74); reset the GPU or reboot the node; if the link stays down, "
    "inspect the baseboard"
)
GREW_ACTION = (
    "the link retransmitted or retrained: drain the GPU, watch the counters under load "
    "(nvidia-smi nvlink -e), reset the GPU; if they grow again, inspect the baseboard"
)


def judge(fleet: GpuFleet) -> CheckOutput:
    return judge_each(fleet, "NVLink", "nvlink", READ_KEYS, _gpu)


def _gpu(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    links = [link for link in gpu.get("nvlink") or [] if isinstance(link, dict)]
    if not links:
        why = gpu.why_missing("nvlink")
        source = gpu.source_of("nvlink")
        if source != NVML:
            why = f"{source_name(source)} prints no per-link state (needs NVML)"
        out.not_judged.append(f"GPU {gpu.index}: NVLink: {why}")
        return
    _links(gpu, links, entry, out)
    _errors(gpu, links, entry, out)


def _links(
    gpu: GpuView, links: list[dict[str, Any]], entry: dict[str, Any], out: CheckOutput
) -> None:
    active = [int(link["link"]) for link in links if link.get("active") is True]
    inactive = [int(link["link"]) for link in links if link.get("active") is False]
    unknown = [int(link["link"]) for link in links if not isinstance(link.get("active"), bool)]
    entry["links_reported"] = len(links)
    entry["links_active"] = len(active)
    entry["inactive_links"] = inactive
    entry["links"] = [
        {
            "link": link.get("link"),
            "active": link.get("active"),
            "version": link.get("version"),
            "remote_pci_bus_id": link.get("remote_pci_bus_id"),
        }
        for link in links
    ]
    if unknown:
        out.not_judged.append(
            f"GPU {gpu.index}: NVLink state of link(s) {_list(unknown)}: the read failed"
        )
    for state, count in (("active", len(active)), ("inactive", len(inactive))):
        out.metrics.append(gpu.metric("sitscheck.nvlink.links", count, "{link}", state=state))
    if inactive:
        out.findings.append(
            Finding(
                code="nvlink.link_inactive",
                severity=Severity.CRITICAL,
                message=(
                    f"GPU {gpu.index}: NVLink {_list(inactive)} not active "
                    f"({len(active)} of {len(links)} links up)"
                ),
                device=gpu.device(),
                evidence=[gpu.evidence("nvlink", f"link {n}: inactive") for n in inactive[:8]],
                action=INACTIVE_ACTION,
            )
        )


def _errors(
    gpu: GpuView, links: list[dict[str, Any]], entry: dict[str, Any], out: CheckOutput
) -> None:
    totals: dict[str, int] = {}
    growth: dict[str, int] = {}
    grew: list[str] = []  # replay/recovery growth, per link
    have_end = all(isinstance(link.get("errors_end"), dict) for link in links)
    for link in links:
        first = _counters(link.get("errors")) or {}
        last = _counters(link.get("errors_end"))
        for counter in COUNTERS:
            before = number(first.get(counter))
            after = number(last.get(counter)) if last is not None else None
            latest = after if after is not None else before
            if latest is not None:
                totals[counter] = totals.get(counter, 0) + int(latest)
            if before is not None and after is not None:
                delta = int(max(after - before, 0))
                growth[counter] = growth.get(counter, 0) + delta
                if delta and counter in ALWAYS_BAD:
                    grew.append(f"link {link.get('link')} {counter} +{delta}")
    entry["errors_total"] = totals
    for counter, total in totals.items():
        out.metrics.append(
            gpu.metric(
                "hw.errors",
                total,
                "{error}",
                **{"error.type": f"nvlink_{counter}", "hw.type": "gpu"},
            )
        )
    if not have_end or gpu.counter_window_s is None:
        out.not_judged.append(
            f"GPU {gpu.index}: NVLink error growth: the counters were read once, "
            "not at both ends of the sampling window"
        )
        return
    entry["errors_delta"] = growth
    window, why_not = gpu.rate_window_s()
    if window is None:
        out.not_judged.append(f"GPU {gpu.index}: NVLink error rates: {why_not}")
    else:
        entry["errors_per_s"] = {c: round(n / window, 3) for c, n in growth.items()}
    if grew:
        out.findings.append(
            Finding(
                code="nvlink.errors_grew",
                severity=Severity.CRITICAL,
                message=(
                    f"GPU {gpu.index}: NVLink replay/recovery errors during the "
                    f"{gpu.counter_window_s} s window: {', '.join(grew[:8])}"
                    + (f" (and {len(grew) - 8} more)" if len(grew) > 8 else "")
                ),
                device=gpu.device(),
                evidence=[gpu.evidence("nvlink.errors", "; ".join(grew[:8]))],
                action=GREW_ACTION,
            )
        )


def _counters(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _list(numbers: list[int]) -> str:
    return ", ".join(str(n) for n in numbers)


# What the `nvlink` check runs (see `sitscheck.check.LazyCheck`).
WORK = FleetCheck(judge)
