"""The `nvlink` check's facts: per GPU, each link's state and the error counters summed."""

from __future__ import annotations

from sitscheck.contract.facts import FactsModel, FleetFacts, GpuViewFacts


class Link(FactsModel):
    link: int
    active: bool | None  # null: the state read failed
    version: int | None
    remote_pci_bus_id: str | None


class Counters(FactsModel):
    """NVLink error counters summed over the GPU's links (nvmlDeviceGetNvLinkErrorCounter);
    a counter no link reported is absent."""

    replay: int | None = None
    recovery: int | None = None
    crc_flit: int | None = None
    crc_data: int | None = None


class Rates(FactsModel):
    """The counters' growth per second over the window."""

    replay: float | None = None
    recovery: float | None = None
    crc_flit: float | None = None
    crc_data: float | None = None


class Gpu(GpuViewFacts):
    """`gpu.nvlink` in GPU rules; absent beyond the identity where no link state was read."""

    links_reported: int | None = None
    links_active: int | None = None
    inactive_links: list[int] | None = None
    links: list[Link] | None = None
    errors_total: Counters | None = None
    errors_delta: Counters | None = None  # growth over the window (read at both ends)
    errors_per_s: Rates | None = None  # only over a window of at least 1 s


class Facts(FleetFacts):
    gpus: list[Gpu]
