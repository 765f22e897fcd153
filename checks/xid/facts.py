"""The `xid` check's facts: every Xid, SXid and fallen-off-the-bus report of the kernel log,
and per GPU the Xids seen on it."""

from __future__ import annotations

from sitscheck.contract.facts import FactsModel, GpuRefFacts, KernelLogFacts, StormCounts


class Event(FactsModel):
    """One report (`parse.XidEvent.to_fact`): an Xid has `xid`, an NVSwitch SXid `sxid`."""

    device: str | None  # the PCI bus id the report names
    xid: int | None
    sxid: int | None
    pid: int | None
    process: str | None
    time: str | None
    message: str


class Gpu(GpuRefFacts):
    """`gpu.xid` in GPU rules (`judge.gpu_summaries`)."""

    xids: dict[str, int]  # Xid number (as text) -> reports of it on this GPU
    critical: bool  # one of them is a critical Xid
    fallen_off_bus: bool


class Group(StormCounts):
    """Every report of one (device, xid, sxid)."""

    device: str | None
    xid: int | None
    sxid: int | None


class Facts(FactsModel):
    events: list[Event]  # the first 1,000 in log order
    event_count: int  # every report of the log
    groups: list[Group]  # all of them, counted
    gpus: list[Gpu]
    log: KernelLogFacts
