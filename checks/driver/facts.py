"""The `driver` check's facts: the GPU inventory (`inventory.Inventory.to_fact`)."""

from __future__ import annotations

from msgspec import field
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
    source: str | None = None  # where its identity came from (nvml, nvidia-smi -L, ...)
    sources: dict[str, str] | None = None  # values another source gave: record path → source


class Facts(FactsModel, kw_only=True):
    # nvml, nvidia-smi -L, nvidia-smi --query-gpu or nvidia-smi -q: the first read; null: no driver
    source: str | None
    sources: list[str] = field(default_factory=list)  # every source fused, in the order trusted
    driver_version: str | None = None
    cuda_driver_version: int | None = None  # e.g. 13000 for CUDA 13.0
    gpu_count: int
    attached_gpus: int | None = None  # the count the output states ("Attached GPUs" of -q)
    gpus: list[Gpu]
    # bus ids of the NVIDIA GPUs sysfs shows on the PCI bus (those bound to vfio-pci or
    # pci-stub left out), read where no source lists a GPU; null where the driver lists GPUs
    gpus_on_bus: list[str] | None = None
    disagreements: list[str] = field(default_factory=list)  # values two sources read differently
