"""Pure: how two GPUs reach each other (NVLink, and over how many links) per NVML.

From the NVML snapshot (`nvml.json`): `pairs[]` says whether a pair's P2P runs over NVLink
(`p2p_nvlink`), each GPU's `nvlink[]` its links' state and far end. Links whose far
end is the peer's bus id join the pair directly (bridged cards, NVLink without a switch);
where none does but the pair is on NVLink, the links reach an NVSwitch and the pair has all
of the smaller link count between them (HGX boards: 18 on H100/H200).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct
from sitscheck.sources.nvml_record import normalise_bus_id


class PeerPath(Struct, frozen=True):
    """How a GPU pair reaches each other per NVML: NVLink (and how many links) or PCIe."""

    via: str  # "nvlink" or "pcie"
    links: int | None = None  # NVLinks between the two (None: unknown)


def peer_paths(snapshot: Mapping[str, Any] | None) -> dict[tuple[int, int], PeerPath]:
    """(lower index, higher index) -> the pair's path, for the pairs NVML read."""
    if not snapshot:
        return {}
    gpus = {g["index"]: g for g in snapshot.get("gpus") or [] if isinstance(g, dict)}
    found: dict[tuple[int, int], PeerPath] = {}
    for pair in snapshot.get("pairs") or []:
        if not isinstance(pair, dict):
            continue
        a, b, nvlink = pair.get("a"), pair.get("b"), pair.get("p2p_nvlink")
        if not (isinstance(a, int) and isinstance(b, int) and isinstance(nvlink, bool)):
            continue
        key = (min(a, b), max(a, b))
        found[key] = _nvlink(gpus.get(a), gpus.get(b)) if nvlink else PeerPath("pcie")
    return found


def _nvlink(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> PeerPath:
    links_a, links_b = _active(a), _active(b)
    peer = _bus(b)
    direct = sum(1 for link in links_a if _bus_text(link.get("remote_pci_bus_id")) == peer)
    count = direct or (min(len(links_a), len(links_b)) if links_a and links_b else 0)
    return PeerPath("nvlink", count or None)


def _active(gpu: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    links = (gpu or {}).get("nvlink") or []
    return [link for link in links if isinstance(link, dict) and link.get("active") is True]


def _bus(gpu: Mapping[str, Any] | None) -> str | None:
    return _bus_text((gpu or {}).get("pci_bus_id"))


def _bus_text(value: Any) -> str | None:
    return normalise_bus_id(value) if isinstance(value, str) else None
