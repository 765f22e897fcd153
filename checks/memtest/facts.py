"""The `memtest` check's facts (facts.md, "Acceptance checks")."""

from __future__ import annotations

from sitscheck.contract.facts import FactsModel


class Ecc(FactsModel):
    volatile_corrected: int
    volatile_uncorrected: int
    remap_pending: bool
    remap_failure: bool
    retired_pages: int


class FirstBad(FactsModel):
    address: int
    expected: str
    read: str


class Gpu(FactsModel):
    gpu: int
    uuid: str | None
    pci_bus_id: str | None
    bytes_tested: int | None
    patterns: list[str] | None
    passes: int | None
    bad_words: int | None
    first_bad: FirstBad | None
    ecc_before: Ecc | None
    ecc_after: Ecc | None
    seconds: float | None


class Facts(FactsModel):
    engine: str | None
    gpus: list[Gpu]
