"""The GPU fleet from the best evidence the sources hold: the NVML snapshot, else nvidia-smi's
CSV and dmon. Read once per run (the sources' memo) and shared by every check that asks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..sources import artifacts as names
from ..sources.base import Sources
from .calls import NVML
from .from_csv import from_smi
from .view import GpuFleet, GpuView


def load(sources: Sources) -> GpuFleet | str:
    """The GPU views from the best evidence the sources hold, or why there is none (read once
    per run and shared by every check that asks)."""
    return sources.memo("gpu_fleet", lambda: _load(sources))


def _load(sources: Sources) -> GpuFleet | str:
    snapshot, reason = sources.gpu_snapshot()
    problems: list[str] = []
    if (
        snapshot is not None
        and isinstance(snapshot.get("gpus"), list)
        and not snapshot.get("error")
    ):
        return from_snapshot(snapshot, names.NVML_JSON if sources.mode == "replay" else NVML)
    problems.append(f"NVML: {reason or (snapshot or {}).get('error') or 'no snapshot'}")
    query = sources.artifact(names.NVIDIA_SMI_QUERY_GPU)
    dmon = sources.artifact(names.NVIDIA_SMI_DMON)
    if query.text is None and dmon.text is None:
        reasons = [a.reason for a in (query, dmon) if a.reason]
        return "no GPU readings: " + "; ".join([*problems, *reasons])
    fleet = from_smi(query.text, query.ref, dmon.text, dmon.ref, problems)
    if not fleet.gpus:  # outputs there, but no GPU could be read from them: not healthy
        return "no GPU readings: " + "; ".join(fleet.problems or ("no GPU rows in the output",))
    return fleet


def from_snapshot(snapshot: Mapping[str, Any], ref: str) -> GpuFleet:
    gpus: list[GpuView] = []
    for position, raw in enumerate(snapshot.get("gpus") or []):
        if not isinstance(raw, dict):
            continue
        index = raw.get("index")
        gpus.append(GpuView(index if isinstance(index, int) else position, raw, NVML, ref))
    return GpuFleet(tuple(gpus), NVML, ref)
