"""The bar1_memory check's facts: a typed model with a JSON Schema.

`Bar1Facts` is what the check reports under `checks.bar1_memory.facts`; each GPU's record is
also what per-GPU rules read as `gpu.bar1_memory.*`. A value NVML did not give is left out of
the record (its `state` says why), never written as zero.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Bar1Gpu(BaseModel):
    """One GPU's BAR1 aperture (bytes as NVML gives them; MiB as nvidia-smi prints them)."""

    model_config = ConfigDict(extra="forbid")

    index: int
    pci_bus_id: str | None = None
    uuid: str | None = None
    name: str | None = None
    state: str = Field(
        description="ok, or why there is no reading: not_supported (a GPU whose memory the CPU "
        "reaches another way, such as GH200's C2C), no_permission, error, timeout, gpu_lost, "
        "reset_required, not_recorded"
    )
    total_bytes: int | None = Field(default=None, description="the aperture's size")
    used_bytes: int | None = Field(default=None, description="bytes mapped")
    free_bytes: int | None = Field(default=None, description="bytes left to map")
    total_mib: int | None = None
    used_mib: int | None = None
    used_percent: float | None = Field(default=None, description="used of total, in percent")


class Bar1Facts(BaseModel):
    """`checks.bar1_memory.facts`."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="where the readings came from: nvml (live) or nvml.json")
    gpus: list[Bar1Gpu] = Field(description="every GPU NVML lists, in its order")
