"""The finding for a device whose sysfs folder disappeared while a check read it.

Found a moment before and gone now: hot-unplug, a device fallen off the bus, a reset under
way. What the check wanted from that folder is unknown, which is not healthy (UNKNOWN), and
the message names the device, the folder and what was being read. Pure.
"""

from __future__ import annotations

from ..models import Device, Evidence, Finding, Severity
from .declarations import CodeTable


def vanished_finding(
    *, codes: CodeTable, code: str, what: str, gpu: Device, bus_id: str, folder: str
) -> Finding:
    """The finding `code` (a check's `<check>.sysfs_vanished`): `folder` (of `bus_id`, on
    `gpu`'s path) disappeared while `what` was read; the action is `code`'s in `codes`."""
    spec = codes.get(code)
    role = "the GPU" if bus_id == gpu.pci_bus_id else f"port {bus_id} above it"
    return Finding(
        code=code,
        severity=Severity.UNKNOWN,
        message=(
            f"GPU {gpu.index} ({gpu.pci_bus_id or 'bus id unknown'}): the sysfs folder of "
            f"{role} ({bus_id}) disappeared while sitscheck read its {what}: unknown (hot-unplug, "
            "a device fallen off the bus, or a reset under way)"
        ),
        device=gpu,
        evidence=[Evidence(source="sysfs", ref=folder, excerpt="folder no longer exists")],
        action=spec.action.replace("<bus id>", bus_id) if spec is not None else None,
    )
