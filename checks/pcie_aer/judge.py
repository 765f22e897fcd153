"""Pure: map AER events and counters onto GPUs and say what needs no threshold.

The events are read as their tally (`tally.AerTally`: per device in error, per uncorrectable
severity and device), which a storm of any length keeps in bounded memory."""

from __future__ import annotations

from typing import Any

from msgspec import Struct, field
from sitscheck.contract.vanished import vanished_finding
from sitscheck.gpu.identity import GpuRef
from sitscheck.models import Device, Evidence, Finding, Severity

from .codes import CODES
from .tally import EXCERPT, AerTally, BusTally, UncorrectedTally

SEVERITY_OF = {"fatal": Severity.CRITICAL, "nonfatal": Severity.WARNING}


class GpuPath(Struct):
    """One GPU's PCIe path, root port first: AER counters per port, max link gen, what vanished."""

    gpu: GpuRef
    ports: list[str]  # bus ids root port first, the GPU last
    counters: dict[str, dict[str, int]] = field(default_factory=dict)  # bus id -> counts
    link_gen_max: int | None = None
    vanished: list[tuple[str, str]] = field(default_factory=list)  # (bus id, folder) gone


def _ids(path: GpuPath) -> set[str]:
    return set(path.ports) | ({path.gpu.pci_bus_id} if path.gpu.pci_bus_id else set())


def buses_of(path: GpuPath, tally: AerTally) -> list[BusTally]:
    """The tallies of the devices on the path (events keyed `device or reporter`)."""
    ids = _ids(path)
    return [t for bus, t in tally.buses.items() if bus in ids]


def gpu_summary(path: GpuPath, tally: AerTally) -> dict[str, Any]:
    mine = buses_of(path, tally)
    by_severity = {
        s: sum(t.by_severity[s] for t in mine) for s in ("corrected", "nonfatal", "fatal")
    }
    corrected = by_severity["corrected"]
    span = _span_minutes(mine)
    rate: float | None
    if not corrected:
        rate = 0.0
    elif span is None:
        rate = None if corrected > 1 else 1.0
    else:
        rate = round(corrected / max(span, 1.0), 3)
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
        "containments": sum(t.containments for t in mine),
        "corrected_per_min": rate,
        "link_gen_max": path.link_gen_max,
        "counters_available": bool(path.counters),
        "counters": totals if path.counters else None,
        "counters_by_port": path.counters,
    }


def _span_minutes(mine: list[BusTally]) -> float | None:
    """`times.span_minutes` over the corrected reports' times: minutes between the first and
    last that read as a point in time; None when fewer than two do."""
    timed = [t for t in mine if t.timed]
    if sum(t.timed for t in timed) < 2:
        return None
    earliest = min(t.earliest for t in timed if t.earliest is not None)
    latest = max(t.latest for t in timed if t.latest is not None)
    return (latest - earliest) / 60.0


def findings(paths: list[GpuPath], tally: AerTally, ref: str) -> list[Finding]:
    out: list[Finding] = []
    owned: set[str | None] = set()
    for path in paths:
        ids = _ids(path)
        owned.update(ids)
        mine = {key: group for key, group in tally.uncorrected.items() if key[1] in ids}
        out.extend(_uncorrectable(mine, path.gpu, path.ports, ref))
        out.extend(_counter_findings(path, buses_of(path, tally)))
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
    strays = {key: group for key, group in tally.uncorrected.items() if key[1] not in owned}
    out.extend(_uncorrectable(strays, None, [], ref))
    return out


def _uncorrectable(
    groups: dict[tuple[str, str | None], UncorrectedTally],
    gpu: GpuRef | None,
    ports: list[str],
    ref: str,
) -> list[Finding]:
    out = []
    for (severity, bus), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        errors = sorted(group.errors)
        where = _where(bus, gpu, ports)
        contained = group.contained
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
                    f"{group.count} uncorrectable ({severity}) AER report(s) from "
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


def _counter_findings(path: GpuPath, logged: list[BusTally]) -> list[Finding]:
    out = []
    for kind, severity in (("fatal", Severity.CRITICAL), ("nonfatal", Severity.WARNING)):
        counted = {bus: c.get(kind, 0) for bus, c in path.counters.items() if c.get(kind, 0) > 0}
        logged_count = sum(t.by_severity[kind] for t in logged)
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


def _excerpt(group: UncorrectedTally) -> str:
    lines = [
        f"{e.time or '-'} {e.severity}{' DPC containment' if e.containment else ''}"
        f" {e.type or ''} {e.device or e.reporter} {','.join(e.errors)}"
        for _, e in group.first[:EXCERPT]
    ]
    if group.count > EXCERPT:
        lines.append(f"... and {group.count - EXCERPT} more")
    return "\n".join(lines)
