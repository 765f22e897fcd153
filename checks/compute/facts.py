"""The `compute` check's facts (facts.md, "Acceptance checks")."""

from __future__ import annotations

from sitscheck.contract.facts import FactsModel


class Gpu(FactsModel):
    gpu: int
    uuid: str | None
    pci_bus_id: str | None
    dtype: str | None
    shape: list[int] | None
    repeats: int | None
    mismatched_repeats: list[int] | None
    digest: str | None
    matches_node: bool | None
    reference_max_rel_error: float | None
    tflops_median: float | None


class Facts(FactsModel):
    engine: str | None
    gpus: list[Gpu]
