"""The GPUs the daemon remembers between runs: each GPU's identity as the runs knew it, so a
GPU that stops answering keeps its UUID and model (`sitscheck.gpu.resolve`), in its findings
and in every output's labels.

- `remembered(report, before)`: the report's GPU inventory (the driver check's), then the GPUs
  remembered before that it does not show (a GPU gone from the bus, a run whose driver check
  could not list the GPUs), at most `MAX_REMEMBERED`.
- `last_known(state, host, ref)`: what a run may use of them: only a state of the same node.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..export.inventory import Inventory
from ..gpu.fusion import folded
from ..models import KnownGpu, Report
from ..sources.base import LastKnown
from .state import DaemonState

MAX_REMEMBERED = 64  # more GPUs than a node has, fewer than a state file should grow by


def remembered(report: Report, before: Sequence[KnownGpu]) -> list[KnownGpu]:
    """The identities to keep for the next run."""
    now = [
        KnownGpu(
            index=gpu.index,
            pci_bus_id=gpu.pci_bus_id,
            uuid=gpu.uuid,
            name=gpu.model,
            pci_device_id=gpu.pci_device_id,
        )
        for gpu in Inventory.of(report).gpus
        if gpu.pci_bus_id or gpu.uuid
    ]
    kept = [gpu for gpu in before if not any(_same(gpu, other) for other in now)]
    return (now + kept)[:MAX_REMEMBERED]


def _same(a: KnownGpu, b: KnownGpu) -> bool:
    """One GPU, or one slot: the same bus id or the same UUID."""
    if a.pci_bus_id and a.pci_bus_id == b.pci_bus_id:
        return True
    return folded(a.uuid) is not None and folded(a.uuid) == folded(b.uuid)


def last_known(state: DaemonState | None, host: object, ref: str) -> LastKnown | None:
    """The state's GPUs, where it is the state of this node (`host`: the run's host name)."""
    if state is None or not state.gpus or not isinstance(host, str) or state.host != host:
        return None
    written = f", written {state.written_at}" if state.written_at else ""
    return LastKnown(f"{ref}{written}", tuple(state.gpus))
