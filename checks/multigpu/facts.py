"""The `multigpu` check's facts: the all-reduce's ranks and how each ended (the bus bandwidth
is the `bandwidth` check's fact `nccl`)."""

from __future__ import annotations

from sitscheck.contract.facts import FactsModel


class Gpu(FactsModel):
    gpu: int
    uuid: str | None
    pci_bus_id: str | None
    rank: int | None  # null: the GPU took no part (not run, or its rank never said)
    status: str  # ok, failed, hung, interrupted, not_run
    wrong_elements: int | None  # elements whose checked sum read wrong; null: not checked


class Facts(FactsModel):
    engine: str | None  # "torch": NCCL through PyTorch's torch.distributed
    nccl_version: str | None
    gpus: list[Gpu]
