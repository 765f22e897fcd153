"""A check's declared NVML readings, per GPU (`CheckContext.nvml_readings()`).

What a check declared (`NvmlRead`) was read live for every GPU, recorded by `collect` in the
GPU's record of nvml.json, and is read back here the same way live and replayed: each value
with its state, `ok` or why there is none (`not_supported`, `no_permission`, `error`,
`timeout`, `gpu_lost`, `reset_required`, or `not_recorded`: the evidence holds no reading,
as a bundle recorded without the check). A value that is not `ok` is None: missing is never
zero. A bundle's values are what its nvml.json holds: the check tests their shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from ..errors import ProbeError
from ..sources.artifacts import NVML_JSON
from ..sources.nvml_record import FAULT_STATES, STATE_WORDS, hw_id
from .declarations import NvmlRead

if TYPE_CHECKING:
    from ..models import Device
    from ..sources.base import Sources

NOT_RECORDED = "not_recorded"


class NvmlValue(Struct, frozen=True):
    """One declared reading of one GPU: its value (plain data, as nvml.json holds it) when
    `state` is `ok`, else None and why (`detail`: the call and its error, where there is one)."""

    key: str
    function: str
    value: Any = None
    state: str = "ok"
    detail: str | None = None

    @property
    def ok(self) -> bool:
        return self.state == "ok"

    @property
    def failed(self) -> bool:
        """The read failed (error, timeout): the check cannot decide (UNKNOWN)."""
        return self.state in FAULT_STATES

    def why(self) -> str:
        """Words for a value that is not there: its state, and the error where one was given."""
        words = STATE_WORDS.get(self.state, self.state)
        return f"{words} ({self.detail})" if self.detail else words


class NvmlGpu(Struct, frozen=True):
    """One GPU as NVML named it, and the check's declared readings of it."""

    index: int
    pci_bus_id: str | None
    uuid: str | None
    name: str | None
    lost: str | None  # the state of a GPU that stopped answering (gpu_lost, timeout, ...)
    values: Mapping[str, NvmlValue]

    def reading(self, key: str) -> NvmlValue:
        """The declared reading `key`; a key the check did not declare is its error."""
        value = self.values.get(key)
        if value is None:
            raise ProbeError(f"NVML key {key!r} is not declared by the check (EvidenceSpec)")
        return value

    def device(self) -> Device:
        from ..models import Device

        return Device(index=self.index, pci_bus_id=self.pci_bus_id, name=self.name, uuid=self.uuid)

    def labels(self, **extra: str) -> dict[str, str]:
        """A metric's labels for this GPU: `hw.id` (UUID, else bus id) and `gpu.index`."""
        gpu = hw_id(self.index, self.uuid, self.pci_bus_id)
        return {"hw.id": gpu, "gpu.index": str(self.index), **extra}


class NvmlReadings(Struct, frozen=True):
    """Every GPU's declared readings; `problem`: why there are none (no NVML snapshot)."""

    gpus: tuple[NvmlGpu, ...] = ()
    ref: str = "nvml"  # where they were read: NVML live, the bundle's nvml.json
    problem: str | None = None


def readings_of(sources: Sources, reads: Sequence[NvmlRead]) -> NvmlReadings:
    """The declared readings of every GPU in the sources' NVML snapshot."""
    snapshot, reason = sources.gpu_snapshot()
    ref = "nvml" if sources.mode == "live" else NVML_JSON
    if snapshot is None or snapshot.get("error") or not isinstance(snapshot.get("gpus"), list):
        problem = reason or (snapshot or {}).get("error") or "no NVML snapshot"
        return NvmlReadings(ref=ref, problem=f"NVML: {problem}")
    gpus = []
    for position, record in enumerate(snapshot["gpus"]):
        if isinstance(record, dict):
            gpus.append(_gpu(position, record, reads, ref))
    return NvmlReadings(tuple(gpus), ref)


def nvml_reads_skip(sources: Sources, reads: Sequence[NvmlRead]) -> str | None:
    """`applicable` of a check that reads only its declared NVML calls: it runs wherever the
    driver is; a bundle that holds none of its readings (no nvml.json, or one recorded
    without the check) is skipped, saying so. One whose nvml.json cannot be read is not
    skipped: the check is UNKNOWN with the reason."""
    driver = sources.driver()
    if driver.state != "present":
        return driver.detail
    if sources.mode == "live":
        return None
    snapshot, _ = sources.gpu_snapshot()
    if snapshot is None and sources.artifact(NVML_JSON).absent:
        return f"no {NVML_JSON} in the bundle"
    gpus = (snapshot or {}).get("gpus")
    if not isinstance(gpus, list) or not gpus:
        return None
    keys = [read.key for read in reads]
    if any(isinstance(g, dict) and any(_recorded(g, key) for key in keys) for g in gpus):
        return None
    return f"{NVML_JSON} was recorded without {', '.join(keys)} (by a sitscheck without the check)"


def _recorded(record: Mapping[str, Any], key: str) -> bool:
    states = record.get("unavailable")
    return record.get(key) is not None or (isinstance(states, dict) and key in states)


def _gpu(position: int, record: Mapping[str, Any], reads: Sequence[NvmlRead], ref: str) -> NvmlGpu:
    index = record.get("index")
    lost = record.get("lost")
    lost_state = str(lost.get("state") or "gpu_lost") if isinstance(lost, dict) else None
    return NvmlGpu(
        index=index if isinstance(index, int) else position,
        pci_bus_id=_text(record.get("pci_bus_id")),
        uuid=_text(record.get("uuid")),
        name=_text(record.get("name")),
        lost=lost_state,
        values={read.key: _value(record, read, ref) for read in reads},
    )


def _value(record: Mapping[str, Any], read: NvmlRead, ref: str) -> NvmlValue:
    states = record.get("unavailable")
    failures = record.get("failures")
    state = states.get(read.key) if isinstance(states, dict) else None
    if isinstance(state, str) and state != "ok":
        detail = failures.get(read.key) if isinstance(failures, dict) else None
        return NvmlValue(read.key, read.function, None, state, _text(detail))
    value = record.get(read.key)
    if value is not None:
        return NvmlValue(read.key, read.function, value)
    lost = record.get("lost")
    if isinstance(lost, dict):
        state = str(lost.get("state") or "gpu_lost")
        return NvmlValue(read.key, read.function, None, state, _text(lost.get("detail")))
    return NvmlValue(read.key, read.function, None, NOT_RECORDED, f"{ref} holds no {read.key}")


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
