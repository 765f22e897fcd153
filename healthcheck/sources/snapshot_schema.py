"""The shape of a bundle's `nvml.json`, checked before any check reads it.

A bundle can come from a sick or hostile machine, or be edited by hand: a wrong type anywhere
must be one clear message naming the file and the place, never an internal error in every
check that reads the snapshot. Unknown keys are allowed (newer writers add fields), and
every field has a default: a bundle written before a reading existed (memory in the samples,
the energy and NVLink throughput counters) replays, the reading "not recorded", never zero.
An error counter below zero is no count at all: refused, named (NaN and Infinity were read as
"not recorded" before this, see `replay.py`).
"""

from __future__ import annotations

from typing import Annotated, Any

from msgspec import Meta, Struct, field

from ..structs import Invalid, convert

Number = int | float | None
# an error counter: never negative
Count = Annotated[int, Meta(ge=0)] | Annotated[float, Meta(ge=0)] | None


class _Loose(Struct, kw_only=True):  # unknown keys are read past
    pass


class _Link(_Loose):
    link: int
    active: bool | None = None
    remote_pci_bus_id: str | None = None
    version: int | None = None
    errors: dict[str, Count] = {}
    errors_end: dict[str, Count] = {}


class _Sample(_Loose):
    t: float | None = None
    util_gpu: Number = None
    util_mem: Number = None
    power_w: Number = None
    sm_clock_mhz: Number = None
    mem_clock_mhz: Number = None
    temp_c: Number = None
    mem_temp_c: Number = None
    clock_event_reasons: int | None = None
    pcie_tx_kbps: Number = None
    pcie_rx_kbps: Number = None
    mem_total_bytes: Number = None
    mem_used_bytes: Number = None
    mem_reserved_bytes: Number = None


class _Ecc(_Loose):
    mode_enabled: bool | None = None
    volatile: dict[str, Count] = {}
    aggregate: dict[str, Count] = {}


class _Remap(_Loose):
    corrected: Count = None
    uncorrected: Count = None
    histogram: dict[str, Count] = {}


class _Retired(_Loose):
    sbe: Count = None
    dbe: Count = None


class _Gpu(_Loose):
    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    pci_device_id: str | None = None
    vbios: str | None = None
    persistence_mode: bool | None = None
    pcie: dict[str, Number] = {}
    power: dict[str, Number] = {}
    temperature: dict[str, Number] = {}
    clocks_max_mhz: dict[str, Number] = {}
    ecc: _Ecc = field(default_factory=_Ecc)
    remap: _Remap | None = None
    retired_pages: _Retired | None = None
    nvlink: list[_Link] = []
    violations_ns_start: dict[str, Number] = {}
    violations_ns_end: dict[str, Number] = {}
    energy_mj_start: Number = None
    energy_mj_end: Number = None
    nvlink_throughput_kib_start: dict[str, Number] = {}
    nvlink_throughput_kib_end: dict[str, Number] = {}
    recovery_action: int | None = None
    sampled_s: Number = None
    counters_s: Number = None
    samples: list[_Sample] = []
    gpm: list[dict[str, Number]] = []
    unavailable: dict[str, str] = {}
    failures: dict[str, str] = {}
    lost: dict[str, Any] | None = None


class _Pair(_Loose):
    a: int
    b: int
    common_ancestor: str | None = None
    p2p_nvlink: bool | None = None


class _Snapshot(_Loose):
    format: str | None = None
    version: int | None = None
    gpus: list[_Gpu] = []
    pairs: list[_Pair] = []
    device_count: int | None = None


def snapshot_problem(data: object, ref: str) -> str | None:
    """None when `data` has the nvml.json shape, else one message naming where it does not."""
    try:
        convert(data, _Snapshot, strict=False)
    except Invalid as exc:
        return f"{ref}: {exc}"
    return None
