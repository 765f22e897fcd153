"""Each GPU's identity from every source that knew it, once the GPU outputs are fused
(`fusion`): what the node's other evidence, and the last known inventory, say of a GPU the
outputs no longer name (lost, fallen off the bus).

- Its PCI bus id from sysfs, where the list is complete, every other GPU has its own, and
  sysfs shows exactly one NVIDIA GPU none of them claims (NVML cannot name a GPU whose handle
  it cannot open; a hung nvidia-smi names none).
- Its PCI device id from sysfs (the device's folder outlives its falling off the bus): the
  profile is chosen by it.
- Its UUID, model name and device id from the last known inventory (a daemon run's state:
  the node's GPUs as they were when they answered), matched by PCI bus id, else by UUID, never
  by index (a GPU that drops out renumbers the ones after it).

Only a value no source of this run has is filled, and the record's `sources` names where it
came from. An earlier identity that contradicts this run's (another UUID, model or device id
at that bus: the GPU was replaced) is not used, and the fleet says so (`identity_notes`, which
the driver check reports): a GPU's identity is never a merge of two GPUs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import structs

from ..models import KnownGpu
from ..sources.base import LastKnown, Sources
from ..sources.nvml_record import normalise_bus_id
from ..sources.pci import device_path, nvidia_gpus
from .calls import LAST_KNOWN, SYSFS
from .fusion import folded
from .view import GpuFleet, GpuView

# What the last known inventory may fill, in the order a contradiction is told.
REMEMBERED = ("uuid", "pci_device_id", "name", "pci_bus_id")


def resolve(sources: Sources, fleet: GpuFleet) -> GpuFleet:
    """The fleet with each GPU's identity filled from sysfs and the last known inventory."""
    gpus = [_with_sysfs_id(sources, view) for view in _bus_from_sysfs(sources, fleet)]
    notes: list[str] = []
    known = sources.last_known()
    if known is not None and known.gpus:
        gpus = [_from_last_known(view, known, notes) for view in gpus]
    return structs.replace(fleet, gpus=tuple(gpus), identity_notes=tuple(notes))


def _filled(view: GpuView, values: Mapping[str, Any], source: str, ref: str) -> GpuView:
    """`view` with `values` set, each named as coming from `source` (read at `ref`)."""
    data: dict[str, Any] = {**view.data, **values}
    data["sources"] = {**view.sources, **{key: source for key in values}}
    return structs.replace(view, data=data, refs={**view.refs, source: ref})


def _bus_from_sysfs(sources: Sources, fleet: GpuFleet) -> list[GpuView]:
    gpus = list(fleet.gpus)
    nameless = [at for at, view in enumerate(gpus) if not view.pci_bus_id]
    if len(nameless) != 1 or not fleet.complete:
        return gpus
    present = nvidia_gpus(sources.sysfs)
    claimed = {view.pci_bus_id for view in gpus if view.pci_bus_id}
    free = [bus for bus in present if bus not in claimed]
    if len(present) != len(gpus) or not claimed <= set(present) or len(free) != 1:
        return gpus  # sysfs does not show the same GPUs: which one it is cannot be told
    (at,), (bus,) = nameless, free
    folder = device_path(sources.sysfs, bus) or f"bus/pci/devices/{bus}"
    gpus[at] = _filled(gpus[at], {"pci_bus_id": bus}, SYSFS, f"{sources.sysfs.root}/{folder}")
    return gpus


def _with_sysfs_id(sources: Sources, view: GpuView) -> GpuView:
    if view.lost is None or view.data.get("pci_device_id") or not view.pci_bus_id:
        return view
    folder = device_path(sources.sysfs, view.pci_bus_id)
    if folder is None:
        return view
    read = sources.sysfs.read_text
    device, vendor = read(f"{folder}/device"), read(f"{folder}/vendor")
    if not device or not vendor:
        return view
    pci_id = f"{_hex4(device)}{_hex4(vendor)}"
    if len(pci_id) != 8:
        return view
    return _filled(view, {"pci_device_id": pci_id}, SYSFS, f"{sources.sysfs.root}/{folder}/device")


def _hex4(text: str) -> str:
    value = text.strip().lower().removeprefix("0x")
    return value if len(value) == 4 and all(c in "0123456789abcdef" for c in value) else ""


def _from_last_known(view: GpuView, known: LastKnown, notes: list[str]) -> GpuView:
    matches = _matches(view, known.gpus)
    if not matches:
        return view
    missing = {key for key in REMEMBERED if not view.data.get(key)}
    if not missing:
        return view  # this run names the GPU fully: nothing to carry over
    who = f"GPU {view.index} ({view.pci_bus_id or view.uuid})"
    if len(matches) > 1:
        notes.append(
            f"{who}: the last known inventory ({known.ref}) holds {len(matches)} GPUs there: "
            "its identity is not carried over"
        )
        return view
    (then,) = matches
    clash = next((c for key in REMEMBERED if (c := _clash(key, view, then))), None)
    if clash is not None:
        notes.append(
            f"{who}: the last known inventory ({known.ref}) had {clash}: another GPU, its "
            "identity not carried over"
        )
        return view
    values = {key: getattr(then, key) for key in REMEMBERED if key in missing}
    values = {key: value for key, value in values.items() if value}
    return _filled(view, values, LAST_KNOWN, known.ref) if values else view


def _matches(view: GpuView, known: Sequence[KnownGpu]) -> list[KnownGpu]:
    """The earlier GPUs at this GPU's bus id (else with its UUID)."""
    if view.pci_bus_id:
        return [g for g in known if normalise_bus_id(g.pci_bus_id) == view.pci_bus_id]
    uuid = folded(view.uuid)
    return [g for g in known if uuid and folded(g.uuid) == uuid]


def _clash(key: str, view: GpuView, then: KnownGpu) -> str | None:
    now, before = view.data.get(key), getattr(then, key)
    if key == "pci_bus_id":
        before = normalise_bus_id(before)
    if not now or not before or folded(now) == folded(before):
        return None
    return f"{key} {before!r} where this run reads {now!r}"
