"""Bases of a check's typed facts model: `Declaration.facts = "module:Model"` names one.

A facts model is a msgspec Struct of exactly what a check returns in `CheckOutput.facts`:
every key it writes is a field, and no other key is accepted (`forbid_unknown_fields`), so the
model's JSON Schema is the list of fact paths a rule may read (`sitscheck rules validate`
walks it) and scripts read. A key the check always writes is required (its value may still be
null); one it writes only sometimes has a default. A map keyed by data (a bus id, an Xid
number) is a `dict[str, X]`. A class whose own required fields follow optional ones is
`kw_only=True` (msgspec, as dataclasses, asks it of each class).

The shapes here are the core's own output that several checks hand on: a GPU's identity as
`sitscheck.gpu` and `gpu.identity.known_gpus` give it, the GPU checks' `{source, ref, gpus}` (the
`gpu.judging.judge_each` loop) and the kernel-log pass's `log`. Imported only where facts are
validated or their schema is made, never to list checks or to run them.
"""

from __future__ import annotations

from msgspec import Struct


class FactsModel(Struct, kw_only=True, forbid_unknown_fields=True):
    """A facts record: every key declared, none other accepted."""


class GpuRefFacts(FactsModel):
    """A GPU as the checks that map evidence onto GPUs know it (`gpus.GpuRef`)."""

    index: int
    pci_bus_id: str | None
    name: str | None


class GpuViewFacts(GpuRefFacts):
    """The keys every GPU check's per-GPU facts start with (`gpu.view.GpuView.identity`);
    `lost` is set (true) on a GPU the driver lost, whose other facts are then absent."""

    uuid: str | None
    source: str  # where the GPU's identity (and every value not in `sources`) came from
    # values another source gave (record path, or "samples" → nvml, nvidia-smi, nvidia-smi -q)
    sources: dict[str, str] | None = None
    lost: bool | None = None


class FleetFacts(FactsModel):
    """A GPU check's facts (`gpu.judging.judge_each`): where the GPU views came from; the check's
    model adds `gpus`, one record (a `GpuViewFacts`) per GPU."""

    source: str  # "nvml", "nvidia-smi" (CSV/dmon), "nvidia-smi -q" or "nvidia-smi -L": the first
    ref: str  # every output read, joined by " + "


class KernelLogFacts(FactsModel):
    """The kernel log a check's events came from (the one kernel-log pass)."""

    source: str
    lines: int
    note: str | None


class Stats(FactsModel):
    """A series read over the sampling window (`gpu.readings.stats`): nearest-rank p95."""

    min: float
    mean: float
    p95: float
    max: float


class StormCounts(FactsModel):
    """What a storm group (facts.md "Storms", `kernlog.storm`) counts of its reports."""

    count: int
    first: float | str | None  # seconds since boot, an ISO 8601 time, or null
    last: float | str | None
