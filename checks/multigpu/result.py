"""Pure: the all-reduce's figure in a multi-GPU record, as the `bandwidth` check's `nccl` fact
(facts.md: `{"op": "all_reduce", "bytes": int, "bus_gbs": float}`, with the ranks it ran over
and whether NVLink SHARP was switched off, which the profile's floors depend on)."""

from __future__ import annotations

from typing import Any, TypeGuard

from sitscheck.contract import Sources
from sitscheck.contract.phase_record import PhaseRecord, RecordError, count, parse_record

from .check import RECORD


def nccl_figure(record: PhaseRecord) -> dict[str, Any] | None:
    """The record's figure, or None where it has none or one of another shape."""
    nccl = (record.result or {}).get("nccl")
    if not isinstance(nccl, dict):
        return None
    op, nbytes, bus, ranks = (nccl.get(k) for k in ("op", "bytes", "bus_gbs", "ranks"))
    nvls_disabled = nccl.get("nvls_disabled")
    if not (
        isinstance(op, str)
        and count(nbytes, 1) is not None
        and count(ranks, 1) is not None
        and _number(bus)
    ):
        return None
    if not isinstance(nvls_disabled, bool):
        return None
    return {"op": op, "bytes": nbytes, "bus_gbs": float(bus), "ranks": ranks,
            "nvls_disabled": nvls_disabled}  # fmt: skip


def read_nccl(sources: Sources) -> dict[str, Any] | None:
    """The figure of the multi-GPU record the sources hold, or None (no such record: a run
    other than `accept`, one GPU; or none in it: the `multigpu` check says why)."""
    artifact = sources.artifact(RECORD)
    if artifact.text is None:
        return None
    try:
        return nccl_figure(parse_record(artifact.text))
    except RecordError:
        return None


def _number(value: Any) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
