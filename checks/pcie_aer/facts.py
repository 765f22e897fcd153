"""The `pcie_aer` check's facts: every AER report of the kernel log, and per GPU the reports on
its PCIe path, their rate and the sysfs AER counters of each port."""

from __future__ import annotations

from typing import Literal

from sitscheck.contract.facts import FactsModel, GpuRefFacts, KernelLogFacts, StormCounts


class Event(FactsModel):
    """One AER report (`parse.AerEvent.to_fact`)."""

    reporter: str | None  # the port that reported it
    device: str | None  # the device in error
    vendor_device: str | None
    severity: Literal["corrected", "nonfatal", "fatal"]
    type: str | None  # Physical Layer, Data Link Layer, Transaction Layer
    errors: list[str]  # the error bits named (RxErr, BadTLP, ...)
    multiple: bool
    time: str | None


class EventCounts(FactsModel):
    corrected: int
    nonfatal: int
    fatal: int


class PortCounters(FactsModel):
    """One port's sysfs AER counters (`aer_dev_*` totals, `aer_rootport_total_err_*`); a file
    the port lacks is absent."""

    correctable: int | None = None
    nonfatal: int | None = None
    fatal: int | None = None
    rootport_correctable: int | None = None
    rootport_nonfatal: int | None = None
    rootport_fatal: int | None = None


class CounterTotals(FactsModel):
    """The device counters summed over the GPU's path."""

    correctable: int
    nonfatal: int
    fatal: int


class Gpu(GpuRefFacts):
    """`gpu.pcie_aer` in GPU rules (`judge.gpu_summary`)."""

    path: list[str]  # bus ids, root port first, the GPU last
    events: EventCounts  # the reports on the path, by severity
    containments: int  # of them DPC containments: a port on the path took the link down
    corrected_per_min: float | None  # null: the log's timestamps are not absolute
    link_gen_max: int | None  # the GPU's PCIe generation (sysfs max_link_speed)
    counters_available: bool
    counters: CounterTotals | None
    counters_by_port: dict[str, PortCounters]  # bus id -> its counters


class Group(StormCounts):
    """Every report of one (device, severity, type, errors)."""

    device: str | None
    severity: Literal["corrected", "nonfatal", "fatal"]
    type: str | None
    errors: list[str]


class Facts(FactsModel):
    events: list[Event]  # the first 1,000 in log order
    event_count: int  # every report of the log
    groups: list[Group]  # all of them, counted
    gpus: list[Gpu]
    log: KernelLogFacts
