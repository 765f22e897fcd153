"""Pure: the GPU inventory of the fused GPU fleet, every value with the source it came from."""

from __future__ import annotations

import dataclasses
from dataclasses import asdict
from typing import Any

from msgspec import Struct, field
from sitscheck.gpu.calls import NVML, SMI, SMI_L, SMI_Q, source_name
from sitscheck.gpu.view import GpuFleet
from sitscheck.models import Device, Evidence

# NVML_FI_DEV_GET_GPU_RECOVERY_ACTION values (nvmlDeviceGpuRecoveryAction_t), named as
# nvidia-smi prints them in `gpu_recovery_action` (lower case, spaces as underscores).
RECOVERY_ACTIONS = {0: "none", 1: "reset", 2: "reboot", 3: "drain_p2p", 4: "drain_and_reset"}
# The order the inventory names the source it reads first (its facts' `source`).
NAMING_ORDER = (NVML, SMI_L, SMI, SMI_Q)


@dataclasses.dataclass(frozen=True, slots=True)
class GpuEntry:
    """One GPU of the inventory: identity, state and settings, with the source of each value."""

    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    pci_device_id: str | None = None
    vbios: str | None = None
    persistence_mode: bool | None = None
    recovery_action: str | None = None
    state: str = "ok"
    detail: str | None = None
    source: str | None = None  # where its identity (and every value not in `sources`) came from
    sources: dict[str, str] = dataclasses.field(default_factory=dict)  # from another source
    refs: dict[str, str] = dataclasses.field(default_factory=dict, repr=False)

    def device(self) -> Device:
        return Device(index=self.index, pci_bus_id=self.pci_bus_id, name=self.name)

    def evidence(self, what: str) -> list[Evidence]:
        """Where this GPU's `what` (a record path: "persistence_mode", "lost") was read."""
        source = self.sources.get(what, self.source) or "unknown"
        return [Evidence(source=source, ref=self.refs.get(source, source))]


class Inventory(Struct, frozen=True):
    """The node's GPUs and driver versions, fused from every source, and whether all are listed."""

    source: str
    ref: str
    gpus: list[GpuEntry]
    driver_version: str | None = None
    cuda_driver_version: int | None = None
    sources: list[str] = field(default_factory=list)
    complete: bool = True  # every GPU the driver has is listed (not `nvidia-smi -q -i N`)
    attached: int | None = None  # the count the output states, where it does

    def to_fact(self) -> dict[str, Any]:
        gpus = []
        for gpu in self.gpus:
            entry = asdict(gpu)
            del entry["refs"]
            if not entry["sources"]:
                del entry["sources"]
            gpus.append(entry)
        return {
            "source": self.source,
            "sources": self.sources,
            "driver_version": self.driver_version,
            "cuda_driver_version": self.cuda_driver_version,
            "gpu_count": len(self.gpus),
            "attached_gpus": self.attached,
            "gpus": gpus,
        }


def from_fleet(fleet: GpuFleet) -> Inventory:
    """The inventory of a (fused) GPU fleet: one entry per GPU, every value with its source."""
    gpus: list[GpuEntry] = []
    for view in fleet.gpus:
        lost = view.lost or {}
        refs = {view.source: view.ref, **view.refs}
        gpus.append(
            GpuEntry(
                index=view.index,
                name=view.name,
                uuid=view.uuid,
                pci_bus_id=view.pci_bus_id,
                pci_device_id=_text(view.get("pci_device_id")),
                vbios=_text(view.get("vbios")),
                persistence_mode=_flag(view.get("persistence_mode")),
                recovery_action=_recovery_name(view.get("recovery_action")),
                state=str(lost.get("state", "ok")),
                detail=lost.get("detail"),
                source=source_name(view.source),
                sources={k: source_name(v) for k, v in view.sources.items()},
                refs={source_name(k): v for k, v in refs.items()},
            )
        )
    contributing = fleet.sources or (fleet.source,)
    named = [s for s in NAMING_ORDER if s in contributing] or [fleet.source]
    return Inventory(
        source_name(named[0]),
        fleet.refs.get(named[0], fleet.ref),
        gpus,
        fleet.driver_version,
        fleet.cuda_driver_version,
        sources=[source_name(s) for s in contributing],
        complete=fleet.complete,
        attached=fleet.attached,
    )


def _flag(value: Any) -> bool | None:
    """A mode as NVML gives it (1, 0) or as nvidia-smi's adapters and older bundles hold it."""
    if isinstance(value, bool):
        return value
    return bool(value) if isinstance(value, int) and value in (0, 1) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _recovery_name(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return RECOVERY_ACTIONS.get(value, f"unknown ({value})")
    if isinstance(value, str) and value.strip():
        return "_".join(value.strip().lower().split())
    return None
