"""The sysfs paths `collect` records beyond the globs: the PCIe ports above each HCA and GPU.

`EvidenceSpec.sysfs_paths` names `pci_path_files`: for every HCA of /sys/class/infiniband (its
PCI function from `device/uevent`) and every NVIDIA GPU sysfs shows, the identity and link
files of each device on its path, as resolved paths (`devices/pci0000:15/.../0000:18:00.0/
vendor`), so a replay finds the switch an HCA shares with its GPU as the live node does.
"""

from __future__ import annotations

from sitscheck.sources.base import Sources
from sitscheck.sources.files import FileTree
from sitscheck.sources.pci import DEVICE_FILES, nvidia_gpus, port_folders

from .check import IB
from .parse import slot_name


def hca_bus_ids(sysfs: FileTree) -> dict[str, str]:
    """HCA name → its PCI bus id, for the HCAs whose `device/uevent` names one."""
    found: dict[str, str] = {}
    for name in sysfs.list_dir(IB):
        bus = slot_name(sysfs.read_text(f"{IB}/{name}/device/uevent"))
        if bus is not None:
            found[name] = bus
    return found


def pci_path_files(sources: Sources) -> list[str]:
    sysfs = sources.sysfs
    buses = sorted(set(hca_bus_ids(sysfs).values()) | set(nvidia_gpus(sysfs)))
    found: list[str] = []
    for bus in buses:
        for _bdf, folder in port_folders(sysfs, bus) or []:
            found.extend(f"{folder}/{name}" for name in DEVICE_FILES)
    return list(dict.fromkeys(found))
