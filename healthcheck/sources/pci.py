"""PCI devices in sysfs: where a device sits, the ports above it, the NVIDIA GPUs present.

Live sysfs reaches a device through the `bus/pci/devices/BDF` symlink into
`devices/pci0000:00/.../BDF`; a bundle stores the resolved path itself (no links), so both
are read the same way: the path's components are the upstream ports, root port first.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from .files import FileTree

if TYPE_CHECKING:
    from .base import Sources

BDF = re.compile(r"^[0-9a-f]{4,5}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
NVIDIA_VENDOR = "0x10de"
GPU_CLASSES = ("0x0300", "0x0302")
LINK_FILES = ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")
AER_FILES = (
    "aer_dev_correctable",
    "aer_dev_nonfatal",
    "aer_dev_fatal",
    "aer_rootport_total_err_cor",
    "aer_rootport_total_err_fatal",
    "aer_rootport_total_err_nonfatal",
)
IDENTITY_FILES = ("vendor", "device", "class", "numa_node", "local_cpulist")
# kernel drivers a GPU is bound to on purpose when NVIDIA's driver is not to serve it: handed to
# virtual machines (vfio-pci: KubeVirt, the GPU Operator's passthrough nodes) or held back
PASSTHROUGH_DRIVERS = ("vfio-pci", "pci-stub")
GPU_DRIVERS = "gpu_drivers"  # meta.json: {bus id: the kernel driver bound to it, or null}
DEVICE_FILES = LINK_FILES + AER_FILES + IDENTITY_FILES


def device_path(sysfs: FileTree, bdf: str) -> str | None:
    """`devices/pci0000:00/0000:00:01.0/0000:19:00.0` for a bus id, or None when absent."""
    bdf = bdf.lower()
    resolved = sysfs.real_relative(f"bus/pci/devices/{bdf}")
    if resolved is not None and resolved.startswith("devices/"):
        return resolved
    return _search(sysfs, "devices", bdf, depth=0)


def _search(sysfs: FileTree, folder: str, bdf: str, depth: int) -> str | None:
    if depth > 12:
        return None
    for name in sysfs.list_dir(folder):
        if not (name.startswith("pci") or BDF.match(name)):
            continue
        child = f"{folder}/{name}"
        if name == bdf:
            return child
        found = _search(sysfs, child, bdf, depth + 1)
        if found is not None:
            return found
    return None


def upstream_chain(path: str) -> list[str]:
    """Bus ids along a device path, root port first, the device itself last."""
    return [part for part in path.split("/") if BDF.match(part)]


def port_folders(sysfs: FileTree, bdf: str) -> list[tuple[str, str]] | None:
    """(bus id, its sysfs folder) along a device's path, root port first, the device last;
    None when the device is not in sysfs."""
    path = device_path(sysfs, bdf)
    if path is None:
        return None
    parts = path.split("/")
    return [(bus, "/".join(parts[: parts.index(bus) + 1])) for bus in upstream_chain(path)]


def nvidia_gpus(sysfs: FileTree) -> list[str]:
    """Bus ids of NVIDIA display/3D controllers present in sysfs (live or bundle)."""
    found = []
    names = sysfs.list_dir("bus/pci/devices") or _all_bdfs(sysfs)
    for bdf in names:
        path = device_path(sysfs, bdf)
        if path is None:
            continue
        vendor = (sysfs.read_text(f"{path}/vendor") or "").strip()
        klass = (sysfs.read_text(f"{path}/class") or "").strip()
        if vendor == NVIDIA_VENDOR and klass.startswith(GPU_CLASSES):
            found.append(bdf)
    return sorted(found)


def bound_driver(sysfs: FileTree, bdf: str) -> str | None:
    """The kernel driver bound to a device (its `driver` link's target: nvidia, vfio-pci,
    nouveau), None where none is bound or the tree holds no links (a bundle)."""
    folder = device_path(sysfs, bdf)
    link = sysfs.path(f"{folder}/driver") if folder is not None else None
    if link is None or not link.is_symlink():
        return None
    target = sysfs.real_relative(f"{folder}/driver")
    return target.rsplit("/", 1)[-1] if target else None


def gpu_drivers(sources: Sources) -> dict[str, str | None]:
    """The NVIDIA GPUs on the bus and the kernel driver bound to each: as `collect` recorded
    it (meta.json's `gpu_drivers`; a bundle holds no links), else read from sysfs (live)."""
    recorded = sources.meta().get(GPU_DRIVERS)
    bus = nvidia_gpus(sources.sysfs)
    if isinstance(recorded, dict):
        return {b: d if isinstance(d := recorded.get(b), str) else None for b in bus}
    return {b: bound_driver(sources.sysfs, b) for b in bus}


def _all_bdfs(sysfs: FileTree) -> list[str]:
    found: list[str] = []
    stack = ["devices"]
    while stack and len(found) < 4096:
        folder = stack.pop()
        for name in sysfs.list_dir(folder):
            if name.startswith("pci") or BDF.match(name):
                stack.append(f"{folder}/{name}")
                if BDF.match(name):
                    found.append(name)
    return found


def gpu_path_files(sources: Sources) -> list[str]:
    """The sysfs files `collect` records for the PCIe checks: `DEVICE_FILES` of every port on
    each GPU's path (the GPUs NVML lists and the NVIDIA GPUs sysfs shows), as resolved paths."""
    snapshot, _ = sources.gpu_snapshot()
    bdfs = {g["pci_bus_id"] for g in (snapshot or {}).get("gpus", []) if g.get("pci_bus_id")}
    bdfs.update(nvidia_gpus(sources.sysfs))
    found: list[str] = []
    for bdf in sorted(bdfs):
        for _bus, folder in port_folders(sources.sysfs, bdf) or []:
            found.extend(f"{folder}/{name}" for name in DEVICE_FILES)
    return list(dict.fromkeys(found))
