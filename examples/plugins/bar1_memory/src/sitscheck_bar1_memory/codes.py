"""The bar1_memory check's finding codes: written once, read by findings and `sitscheck explain`."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

EXHAUSTED = "bar1_memory.exhausted"

CODES = Codes(
    [
        CodeSpec(
            code=EXHAUSTED,
            severity=Severity.WARNING,
            meaning=(
                "the GPU's BAR1 aperture is full (NVML: no BAR1 bytes free): nothing more of its "
                "memory can be mapped for the CPU or a peer device, so a new GPUDirect RDMA "
                "registration (NCCL or UCX over InfiniBand, GDRCopy) fails"
            ),
            action=(
                "find the processes holding GPU memory registered for RDMA or mapped through "
                "BAR1 (nvidia-smi -q: BAR1 Memory Usage; the model server, NCCL communicators) "
                "and restart them; where the aperture is small (256 MiB: Resizable BAR or "
                "above-4G decoding off in the BIOS), enable it"
            ),
            kind=FindingKind.CONDITION,
            category=ActionCategory.TRIAGE,
            name="BAR1 aperture full",
        ),
    ]
)
