"""Pure: group Xid events into findings with the catalog's meaning and action.

The events are read as their tally (`tally.XidTally`, one group per device and code), which a
storm of any length keeps in bounded memory."""

from __future__ import annotations

from typing import Any

from msgspec import Struct
from sitscheck.gpu.identity import GpuRef, gpu_for_bus
from sitscheck.models import Device, Evidence, Finding, Severity

from .catalog import XidInfo
from .codes import ACTION_TEXT
from .events import XidEvent
from .tally import EXCERPT, FALLEN_OFF_BUS, XidTally

# NVML's nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) values.
NVML_RECOVERY = {1: "reset_gpu", 2: "reboot_node", 3: "drain_p2p", 4: "drain_and_reset"}
_SEVERITY = {"info": Severity.INFO, "warning": Severity.WARNING, "critical": Severity.CRITICAL}


class Group(Struct):
    """One device's events of one Xid or SXid code: count, first and last reports, catalog entry."""

    device: str | None
    code: int
    kind: str  # "xid" | "sxid"
    count: int
    first: list[XidEvent]  # the first reports (`tally.EXCERPT`), in log order
    last: XidEvent
    info: XidInfo
    sympathetic_to: str | None = None


def group_events(tally: XidTally) -> list[Group]:
    out = [
        Group(g.device, g.code, g.kind, g.count, list(g.first), g.last, g.info)
        for g in tally.ordered()
    ]
    _mark_sympathetic(out)
    return out


def _mark_sympathetic(groups: list[Group]) -> None:
    xids = [g for g in groups if g.kind == "xid"]
    for group in xids:
        if group.code == 45:
            others = sorted({g.code for g in xids if g.device == group.device and g.code != 45})
            if others:
                group.sympathetic_to = "Xid " + ", ".join(map(str, others)) + " on the same GPU"
        elif group.code == 74:
            peers = sorted(
                {
                    f"Xid {g.code} on {g.device}"
                    for g in xids
                    if g.device != group.device and g.info.severity == "critical" and g.code != 74
                }
            )
            if peers:
                group.sympathetic_to = "; ".join(peers)


def findings(
    groups: list[Group], gpus: list[GpuRef], recovery: dict[int, int], ref: str
) -> list[Finding]:
    out = []
    for group in sorted(groups, key=lambda g: (g.device or "", g.kind, g.code)):
        gpu = gpu_for_bus(gpus, group.device)
        severity = _SEVERITY.get(group.info.severity, Severity.WARNING)
        if group.code == 45 and group.sympathetic_to:
            severity = Severity.INFO
        action = group.info.action
        nvml_action = NVML_RECOVERY.get(recovery.get(gpu.index, 0)) if gpu else None
        if nvml_action is not None:
            action = nvml_action  # type: ignore[assignment]
        label = "SXid" if group.kind == "sxid" else "Xid"
        last = group.last
        where = (
            f"GPU {gpu.index} ({group.device})" if gpu else (group.device or "an unnamed device")
        )
        note = f"; likely sympathetic to {group.sympathetic_to}" if group.sympathetic_to else ""
        override = " (NVML recovery action)" if nvml_action else ""
        out.append(
            Finding(
                code=f"{group.kind}.{group.code}",
                severity=severity,
                message=(
                    f"{label} {group.code} ({group.info.name}) ×{group.count} on {where}: "
                    f"{group.info.meaning}{note}. Last: {last.message[:160]}"
                ),
                device=Device(index=gpu.index, pci_bus_id=gpu.pci_bus_id, name=gpu.name)
                if gpu
                else (Device(pci_bus_id=group.device) if group.device else None),
                evidence=[Evidence(source="kernel log", ref=ref, excerpt=_excerpt(group))],
                action=ACTION_TEXT.get(action, action) + override,
            )
        )
    return out


def gpu_summaries(groups: list[Group], gpus: list[GpuRef]) -> list[dict[str, Any]]:
    out = []
    for gpu in gpus:
        mine = [g for g in groups if g.kind == "xid" and g.device == gpu.pci_bus_id]
        out.append(
            {
                "index": gpu.index,
                "pci_bus_id": gpu.pci_bus_id,
                "name": gpu.name,
                "xids": {str(g.code): g.count for g in mine},
                "critical": any(g.info.severity == "critical" for g in mine),
                "fallen_off_bus": any(g.code == FALLEN_OFF_BUS for g in mine),
            }
        )
    return out


def _excerpt(group: Group) -> str:
    rows = [f"{e.time or '-'} {e.device} {_code(e)}: {e.message[:200]}" for e in group.first]
    if group.count > EXCERPT:
        rows.append(f"... {group.count - EXCERPT} more")
    return "\n".join(rows)


def _code(event: XidEvent) -> str:
    return f"SXid {event.sxid}" if event.sxid is not None else f"Xid {event.xid}"
