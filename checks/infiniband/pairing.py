"""Pure: which GPUs share a PCIe switch with each HCA, from their sysfs paths.

A device's path is its chain of bus ids from the root port down to itself
(`sitscheck.sources.pci.upstream_chain`). Two devices whose chains start with the same root
port reach each other without crossing the host bridge (nvidia-smi's PIX/PXB): a root port
has one link, so two devices below it sit behind a switch (on an HGX H100/H200 the GPU's own
PCIe switch, on a DGX H100 the ConnectX-7's). An HCA pairs with the GPUs that share the
deepest such port with it; HCA and GPU under different root ports (PHB, NODE, SYS), or in a
VM whose devices sit on the root bus, pair with nothing here (`nvidia-smi topo -m` may still
pair them; the rules read both).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from msgspec import Struct


class Pairing(Struct, frozen=True):
    """An HCA's GPUs behind the same PCIe switch, and the deepest port they share."""

    gpus: tuple[str, ...]  # bus ids, sorted
    common_port: str | None  # the deepest port the HCA shares with them


def common_depth(a: Sequence[str], b: Sequence[str]) -> int:
    """How many bus ids, from the root port down, two devices' chains share (never the
    devices themselves)."""
    depth = 0
    for left, right in zip(a[:-1], b[:-1], strict=False):
        if left != right:
            break
        depth += 1
    return depth


def pair(
    hcas: Mapping[str, Sequence[str]], gpus: Mapping[str, Sequence[str]]
) -> dict[str, Pairing]:
    """HCA name → the GPUs (bus id → chain) nearest it below a shared port."""
    out: dict[str, Pairing] = {}
    for name, chain in hcas.items():
        depths = {bus: common_depth(chain, path) for bus, path in gpus.items() if bus not in chain}
        best = max(depths.values(), default=0)
        if best < 1:
            out[name] = Pairing((), None)
            continue
        nearest = tuple(sorted(bus for bus, depth in depths.items() if depth == best))
        out[name] = Pairing(nearest, chain[best - 1])
    return out
