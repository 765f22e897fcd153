"""The `memory_errors` check's facts: ECC counts, row remapping and retired pages per GPU."""

from __future__ import annotations

from sitscheck.contract.facts import FactsModel, FleetFacts, GpuViewFacts


class RemapHistogram(FactsModel):
    """Memory banks by spare rows left (nvmlDeviceGetRowRemapperHistogram)."""

    max: int | None = None
    high: int | None = None
    partial: int | None = None
    low: int | None = None
    none: int | None = None


class Gpu(GpuViewFacts):
    """`gpu.memory_errors` in GPU rules; each count only where it was read."""

    ecc_enabled: bool | None = None
    ecc_volatile_corrected: int | None = None
    ecc_volatile_uncorrected: int | None = None
    ecc_aggregate_corrected: int | None = None
    ecc_aggregate_uncorrected: int | None = None
    remap_corrected: int | None = None
    remap_uncorrected: int | None = None
    remap_histogram: RemapHistogram | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    retired_sbe: int | None = None
    retired_dbe: int | None = None
    retired_pending: bool | None = None


class Facts(FleetFacts):
    gpus: list[Gpu]
