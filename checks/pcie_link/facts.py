"""The `pcie_link` check's facts: per GPU, NVML's link, its sysfs path, replays, throughput."""

from __future__ import annotations

from sitscheck.contract.facts import FactsModel, FleetFacts, GpuViewFacts, Stats


class PathLink(FactsModel):
    """One device on the GPU's sysfs path (root port first, the GPU last); `*_expected`: what
    its link can reach, the smaller of its own maximum and its neighbour's."""

    bus_id: str
    role: str  # "gpu" or "port"
    width_current: int | None
    width_max: int | None
    width_expected: int | None
    gen_current: int | None
    gen_max: int | None
    gen_expected: int | None


class Gpu(GpuViewFacts):
    """`gpu.pcie_link` in GPU rules; each reading only where it was read."""

    width_current: int | None = None
    width_max: int | None = None
    gen_current: int | None = None
    gen_max: int | None = None
    gen_device_max: int | None = None
    gen_below_max: bool | None = None  # NVML's or a port's generation below what it can reach
    path: list[PathLink] | None = None
    sysfs_vanished: str | None = None  # the bus id whose sysfs folder went away mid-read
    width_degraded: bool | None = None
    replay_count: int | None = None
    replay_delta: int | None = None
    replay_window_s: float | None = None
    replay_per_min: float | None = None
    tx_bytes_per_s: Stats | None = None
    rx_bytes_per_s: Stats | None = None


class Facts(FleetFacts):
    gpus: list[Gpu]
