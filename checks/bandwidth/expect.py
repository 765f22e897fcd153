"""Pure: what a PCIe link can carry in theory (per direction), and which GPUs share a port.

PCIe's specification, not a threshold (the achievable fractions and the margins are rule
params, rules/bandwidth.yaml; NVLink's per-link rate is the profile's
`nvlink.link_gbs_per_direction`):
GB/s per lane and direction after line coding: 2.5 GT/s 8b/10b (Gen1) 0.25, Gen2 0.5, Gen3
8 GT/s 128b/130b 0.985, Gen4 1.969, Gen5 3.938, Gen6 64 GT/s with 242/256 FLIT encoding 7.56
(PCI-SIG). x16: Gen4 31.5 GB/s (the seed's quick table), Gen5 63.0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from msgspec import Struct
from sitscheck.checks.pcie_link.links import PortLink, expected

PCIE_GBS_PER_LANE = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.56}


class LinkLimit(Struct, frozen=True):
    """The narrowest link on a stretch of a GPU's path: where, and what it carries."""

    bus_id: str
    gen: int
    width: int
    theoretical_gbs: float

    def as_fact(self) -> dict[str, object]:
        return {
            "bus_id": self.bus_id,
            "gen": self.gen,
            "width": self.width,
            "theoretical_gbs": self.theoretical_gbs,
        }


def pcie_gbs(gen: int, width: int) -> float | None:
    per_lane = PCIE_GBS_PER_LANE.get(gen)
    return round(per_lane * width, 1) if per_lane is not None and width > 0 else None


def narrowest(chain: Sequence[PortLink], upto: int | None = None) -> LinkLimit | None:
    """The link of the lowest capability among `chain[:upto + 1]` (all of it by default):
    each link at the narrower of its two ends' maxima, as pcie_link judges widths."""
    found: LinkLimit | None = None
    last = len(chain) - 1 if upto is None else upto
    for position in range(last + 1):
        gen = expected(list(chain), position, "gen_max")
        width = expected(list(chain), position, "width_max")
        if gen is None or width is None:
            continue
        gbs = pcie_gbs(gen, width)
        if gbs is not None and (found is None or gbs < found.theoretical_gbs):
            found = LinkLimit(chain[position].bus_id, gen, width, gbs)
    return found


class SharedPort(Struct, frozen=True):
    """GPUs behind one port: the port, their indices and the narrowest link above it."""

    bus_id: str  # the deepest port every GPU of the group is behind
    gpus: tuple[int, ...]  # GPU indices
    limit: LinkLimit | None  # the narrowest link from the root port down to it


def shared_ports(chains: Mapping[int, Sequence[PortLink]]) -> list[SharedPort]:
    """Groups of two or more GPUs behind one upstream port, each named by its deepest port."""
    behind: dict[str, set[int]] = {}
    depth: dict[str, int] = {}
    for index, chain in chains.items():
        for position, link in enumerate(chain):
            if link.role == "port":
                behind.setdefault(link.bus_id, set()).add(index)
                depth[link.bus_id] = position
    deepest: dict[tuple[int, ...], str] = {}
    for bus_id, members in behind.items():
        group = tuple(sorted(members))
        if len(group) > 1 and (group not in deepest or depth[bus_id] > depth[deepest[group]]):
            deepest[group] = bus_id
    found = []
    for group, bus_id in sorted(deepest.items()):
        chain = chains[group[0]]
        found.append(SharedPort(bus_id, group, narrowest(chain, upto=depth[bus_id])))
    return found
