"""The `driver` check's facts: the GPU inventory (`inventory.Inventory.to_fact`)."""

from __future__ import annotations

from sitscheck.contract.facts import FactsModel


class Gpu(FactsModel):
    """One GPU the driver lists (`inventory.GpuEntry`); `gpu.driver` in GPU rules."""

    index: int
    name: str | None
    uuid: str | None
    pci_bus_id: str | None
    pci_device_id: str | None  # e.g. "233510de" (device id, vendor id)
    vbios: str | None
    persistence_mode: bool | None
    recovery_action: str | None  # none, reset, reboot, drain_p2p, drain_and_reset, ...
    state: str  # "ok", or why the GPU is lost (gpu_lost, reset_required)
    detail: str | None  # the driver's words for a lost GPU


class Facts(FactsModel):
    source: str | None  # nvml, nvidia-smi -L, nvidia-smi --query-gpu; null: no driver
    driver_version: str | None = None
    cuda_driver_version: int | None = None  # e.g. 13000 for CUDA 13.0
    gpu_count: int
    gpus: list[Gpu]
