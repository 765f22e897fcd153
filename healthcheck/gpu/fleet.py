"""The GPU fleet from all the evidence the sources hold, fused (`fusion`): the NVML snapshot,
nvidia-smi's `--query-gpu` CSV and `dmon`, `nvidia-smi -q`, `nvidia-smi -L`; then each GPU's
identity completed (`resolve`) from sysfs and the last known inventory, for a lost GPU the
outputs no longer name. Read once per run (the sources' memo) and shared by every check
that asks.

A replayed bundle gives everything it holds. A live node is read as cheaply as it can be: the
NVML snapshot and `nvidia-smi -L` (which the driver check compares it with); the CSV, dmon and
`-q` only when NVML cannot be used. Once one nvidia-smi command has timed out live, the others
are not started (a wedged driver hangs them all), and the reason says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import structs

from ..sources import artifacts as names
from ..sources.base import Artifact, Sources
from .calls import NVML
from .from_csv import from_smi
from .from_list import from_list
from .from_query_q import from_query_q
from .fusion import merge
from .resolve import resolve
from .view import GpuFleet, GpuView


def load(sources: Sources) -> GpuFleet | str:
    """The fused GPU views, or why there are none (read once per run and shared by every
    check that asks). A fleet from `nvidia-smi -L` alone holds identities, no readings
    (`GpuFleet.has_readings`)."""
    return sources.memo("gpu_fleet", lambda: _load(sources))


def _load(sources: Sources) -> GpuFleet | str:
    fleets: list[GpuFleet] = []
    problems: list[str] = []
    if sources.mode == "live":  # read below in any case: run it while the window samples
        sources.artifact(names.NVIDIA_SMI_L)
    snapshot, reason = sources.gpu_snapshot()
    nvml_ok = (
        snapshot is not None
        and isinstance(snapshot.get("gpus"), list)
        and not snapshot.get("error")
    )
    if nvml_ok:
        assert snapshot is not None
        ref = names.NVML_JSON if sources.mode == "replay" else NVML
        fleets.append(from_snapshot(snapshot, ref))
    else:
        problems.append(f"NVML: {reason or (snapshot or {}).get('error') or 'no snapshot'}")
    wanted = [names.NVIDIA_SMI_L]  # first: the cheapest, and the one a hang is found by
    if sources.mode != "live" or not nvml_ok:
        wanted += [names.NVIDIA_SMI_QUERY_GPU, names.NVIDIA_SMI_DMON, names.NVIDIA_SMI_Q]
    outputs = _read(sources, wanted)
    textless = [a for a in outputs.values() if a.text is None and a.reason]
    missing = tuple(a.reason for a in textless if a.reason)
    unread = tuple(a.reason for a in textless if a.reason and not a.absent)  # those that failed
    query, dmon = outputs.get(names.NVIDIA_SMI_QUERY_GPU), outputs.get(names.NVIDIA_SMI_DMON)
    if (query and query.text is not None) or (dmon and dmon.text is not None):
        fleets.append(
            from_smi(
                query.text if query else None,
                query.ref if query else names.NVIDIA_SMI_QUERY_GPU,
                dmon.text if dmon else None,
                dmon.ref if dmon else names.NVIDIA_SMI_DMON,
            )
        )
    for name, adapter in ((names.NVIDIA_SMI_Q, from_query_q), (names.NVIDIA_SMI_L, from_list)):
        output = outputs.get(name)
        if output is not None and output.text is not None:
            fleets.append(adapter(output.text, output.ref))
    fleet = merge(fleets)
    problems.extend(fleet.problems)
    fleet = resolve(
        sources, structs.replace(fleet, problems=tuple(problems), missing=missing, unread=unread)
    )
    if not fleet.gpus:  # outputs there, but no GPU could be read from them: not healthy
        return "no GPU readings: " + "; ".join(
            [*fleet.problems, *missing] or ["no GPU rows in the output"]
        )
    return fleet


def _read(sources: Sources, wanted: list[str]) -> dict[str, Artifact]:
    outputs: dict[str, Artifact] = {}
    hung: str | None = None
    for name in wanted:
        if hung is not None:
            outputs[name] = Artifact(name, None, name, reason=f"{name}: not run, {hung}")
            continue
        output = outputs[name] = sources.artifact(name)
        if output.timed_out:  # live only: a replayed artifact never times out
            hung = f"an earlier nvidia-smi command timed out ({output.ref})"
    return outputs


def from_snapshot(snapshot: Mapping[str, Any], ref: str) -> GpuFleet:
    gpus: list[GpuView] = []
    for position, raw in enumerate(snapshot.get("gpus") or []):
        if not isinstance(raw, dict):
            continue
        index = raw.get("index")
        gpus.append(GpuView(index if isinstance(index, int) else position, raw, NVML, ref))
    cuda = snapshot.get("cuda_driver_version")
    return GpuFleet(
        tuple(gpus),
        NVML,
        ref,
        driver_version=snapshot.get("driver_version") or None,
        cuda_driver_version=cuda if isinstance(cuda, int) else None,
    )
