"""Pure: map AER events and counters onto GPUs and say what needs no threshold."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from sitscheck.contract.vanished import vanished_finding
from sitscheck.gpu.identity import GpuRef
from sitscheck.kernlog.times import span_minutes
from sitscheck.models import Device, Evidence, Finding, Severity

from .codes import CODES
from .parse import AerEvent

SEVERITY_OF = {"fatal": Severity.CRITICAL, "nonfatal": Severity.WARNING}


@dataclass
class GpuPath:
    gpu: GpuRef
    ports: list[str]  # bus ids root port first, the GPU last
    counters: dict[str, dict[str, int]] = field(default_factory=dict)  # bus id -> counts
    link_gen_max: int | None = None
    vanished: list[tuple[str, str]] = field(default_factory=list)  # (bus id, folder) gone


def events_for(path: GpuPath, events: list[AerEvent]) -> list[AerEvent]:
    ids = set(path.ports) | ({path.gpu.pci_bus_id} if path.gpu.pci_bus_id else set())
    return [e for e in events if (e.device or e.reporter) in ids]


def gpu_summary(path: GpuPath, events: list[AerEvent]) -> dict[str, Any]:
    mine = events_for(path, events)
    by_severity = {
        s: sum(1 for e in mine if e.severity == s) for s in ("corrected", "nonfatal", "fatal")
    }
    corrected = [e for e in mine if e.severity == "corrected"]
    span = span_minutes([e.time for e in corrected])
    rate: float | None
    if not corrected:
        rate = 0.0
    elif span is None:
        rate = None if len(corrected) > 1 else 1.0
    else:
        rate = round(len(corrected) / max(span, 1.0), 3)
    totals = {
        kind: sum(c.get(kind, 0) for c in path.counters.values())
        for kind in ("correctable", "nonfatal", "fatal")
    }
    return {
        "index": path.gpu.index,
        "pci_bus_id": path.gpu.pci_bus_id,
        "name": path.gpu.name,
        "path": path.ports,
        "events": by_severity,
        # DPC containments on the path: the port took the link down (whatever the trigger's
        # severity), what makes a GPU fall off the bus on current servers
        "containments": sum(1 for e in mine if e.containment),
        "corrected_per_min": rate,
        "link_gen_max": path.link_gen_max,
        "counters_available": bool(path.counters),
        "counters": totals if path.counters else None,
        "counters_by_port": path.counters,
    }


def findings(paths: list[GpuPath], events: list[AerEvent], ref: str) -> list[Finding]:
    out: list[Finding] = []
    owned: set[int] = set()
    for path in paths:
        mine = events_for(path, events)
        owned.update(id(e) for e in mine)
        out.extend(_uncorrectable(mine, path.gpu, path.ports, ref))
        out.extend(_counter_findings(path, mine))
        gpu = Device(index=path.gpu.index, pci_bus_id=path.gpu.pci_bus_id)
        out.extend(
            vanished_finding(
                codes=CODES,
                code="pcie_aer.sysfs_vanished",
                what="AER counters",
                gpu=gpu,
                bus_id=bus,
                folder=folder,
            )
            for bus, folder in path.vanished
        )
    strays = [e for e in events if id(e) not in owned]
    out.extend(_uncorrectable(strays, None, [], ref))
    return out


def _uncorrectable(
    events: list[AerEvent], gpu: GpuRef | None, ports: list[str], ref: str
) -> list[Finding]:
    groups: dict[tuple[str, str | None], list[AerEvent]] = defaultdict(list)
    for event in events:
        if event.severity in SEVERITY_OF:
            groups[(event.severity, event.device or event.reporter)].append(event)
    out = []
    for (severity, bus), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        errors = sorted({name for e in group for name in e.errors})
        where = _where(bus, gpu, ports)
        contained = sum(1 for e in group if e.containment)
        took_down = (
            f" ({contained} of them DPC containment(s): the port took the link down)"
            if contained
            else ""
        )
        out.append(
            Finding(
                code=f"pcie_aer.uncorrected_{severity}",
                severity=SEVERITY_OF[severity],
                message=(
                    f"{len(group)} uncorrectable ({severity}) AER report(s) from "
                    f"{bus or 'an unnamed device'}"
                    f"{where}{took_down}: {', '.join(errors) or 'no error bits printed'}"
                ),
                device=Device(index=gpu.index, pci_bus_id=gpu.pci_bus_id) if gpu else None,
                evidence=[
                    Evidence(source="kernel log", ref=ref, excerpt=_excerpt(group)),
                ],
                action=(
                    "drain the node; reseat/inspect the GPU, riser and cable on this path; "
                    "if it recurs, replace the failing part"
                    if severity == "fatal"
                    else "watch for recurrence; inspect the link (riser, cable, slot) if it repeats"
                ),
            )
        )
    return out


def _counter_findings(path: GpuPath, logged: list[AerEvent]) -> list[Finding]:
    out = []
    for kind, severity in (("fatal", Severity.CRITICAL), ("nonfatal", Severity.WARNING)):
        counted = {bus: c.get(kind, 0) for bus, c in path.counters.items() if c.get(kind, 0) > 0}
        logged_count = sum(1 for e in logged if e.severity == kind)
        total = sum(counted.values())
        if total > logged_count:
            ports = ", ".join(f"{bus}: {n}" for bus, n in sorted(counted.items()))
            out.append(
                Finding(
                    code=f"pcie_aer.counter_{kind}",
                    severity=severity,
                    message=(
                        f"sysfs AER counters show {total} uncorrectable ({kind}) error(s) on the "
                        f"path of GPU {path.gpu.index} ({ports}); "
                        f"the kernel log shows {logged_count}"
                    ),
                    device=Device(index=path.gpu.index, pci_bus_id=path.gpu.pci_bus_id),
                    evidence=[Evidence(source="sysfs", ref="aer_dev_" + kind)],
                    action="inspect the link on this path (riser, cable, slot); check the BMC log",
                )
            )
    return out


def _where(bus: str | None, gpu: GpuRef | None, ports: list[str]) -> str:
    if gpu is None:
        return " (not on a GPU's path)"
    if bus == gpu.pci_bus_id:
        return f" (GPU {gpu.index} itself)"
    return f" (port above GPU {gpu.index})"


def _excerpt(events: list[AerEvent]) -> str:
    lines = [
        f"{e.time or '-'} {e.severity}{' DPC containment' if e.containment else ''}"
        f" {e.type or ''} {e.device or e.reporter} {','.join(e.errors)}"
        for e in events[:5]
    ]
    if len(events) > 5:
        lines.append(f"... and {len(events) - 5} more")
    return "\n".join(lines)
