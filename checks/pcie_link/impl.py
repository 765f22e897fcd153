"""The work of the `pcie_link` check: GPU views + sysfs link files → judge."""

from __future__ import annotations

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.gpu.judging import collect_with, skip_unless_driver
from sitscheck.gpu.view import GpuFleet
from sitscheck.sources.base import Sources
from sitscheck.sources.files import FileTree
from sitscheck.sources.pci import port_folders

from .judge import Chain, judge
from .links import PortLink, Vanished, parse_gen, parse_width


class PcieLinkImpl:
    """The work behind `PcieLinkCheck` (imported only when the check runs)."""

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        return skip_unless_driver(sources)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        def with_sysfs(fleet: GpuFleet) -> CheckOutput:
            chains: dict[int, Chain] = {}
            for gpu in fleet.gpus:
                if gpu.pci_bus_id and gpu.lost is None:
                    ctx.ensure_time("reading sysfs PCIe links")
                    chains[gpu.index] = read_chain(ctx.sources.sysfs, gpu.pci_bus_id)
            return judge(fleet, chains)

        return collect_with(ctx.sources, with_sysfs)


def read_chain(sysfs: FileTree, bus_id: str) -> Chain:
    """The GPU's path in sysfs with each device's link files, or why there is none."""
    ports = port_folders(sysfs, bus_id)
    if ports is None:
        return f"{bus_id} not found under {sysfs.root}"
    chain: list[PortLink] = []
    for bdf, folder in ports:
        link = PortLink(
            bus_id=bdf,
            path=folder,
            role="gpu" if bdf == ports[-1][0] else "port",
            width_current=parse_width(sysfs.read_text(f"{folder}/current_link_width")),
            width_max=parse_width(sysfs.read_text(f"{folder}/max_link_width")),
            gen_current=parse_gen(sysfs.read_text(f"{folder}/current_link_speed")),
            gen_max=parse_gen(sysfs.read_text(f"{folder}/max_link_speed")),
        )
        readings = (link.width_current, link.width_max, link.gen_current, link.gen_max)
        # A file that could not be read is "absent" to FileTree; the folder found a moment
        # ago and gone now is a device that vanished mid-read, which is not a healthy link.
        if None in readings and not sysfs.exists(folder):
            return Vanished(bdf, folder)
        chain.append(link)
    return chain
