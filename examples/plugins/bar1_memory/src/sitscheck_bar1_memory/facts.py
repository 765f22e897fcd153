"""The bar1_memory check's facts: a typed model with a JSON Schema.

`Bar1Facts` is what the check reports under `checks.bar1_memory.facts`; each GPU's record is
also what per-GPU rules read as `gpu.bar1_memory.*`. A value NVML did not give is left out of
the record (its `state` says why), never written as zero.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct


class Bar1Gpu(Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True):
    """One GPU's BAR1 aperture (bytes as NVML gives them; MiB as nvidia-smi prints them). A
    value left at its default (None) is left out of the facts (`omit_defaults`)."""

    index: int
    pci_bus_id: str | None = None
    uuid: str | None = None
    name: str | None = None
    state: Annotated[
        str,
        Meta(
            description="ok, or why there is no reading: not_supported (a GPU whose memory the CPU "
            "reaches another way, such as GH200's C2C), no_permission, error, timeout, gpu_lost, "
            "reset_required, not_recorded"
        ),
    ]
    total_bytes: Annotated[int | None, Meta(description="the aperture's size")] = None
    used_bytes: Annotated[int | None, Meta(description="bytes mapped")] = None
    free_bytes: Annotated[int | None, Meta(description="bytes left to map")] = None
    total_mib: int | None = None
    used_mib: int | None = None
    used_percent: Annotated[float | None, Meta(description="used of total, in percent")] = None


class Bar1Facts(Struct, kw_only=True, forbid_unknown_fields=True):
    """`checks.bar1_memory.facts`."""

    source: Annotated[
        str, Meta(description="where the readings came from: nvml (live) or nvml.json")
    ]
    gpus: Annotated[list[Bar1Gpu], Meta(description="every GPU NVML lists, in its order")]
