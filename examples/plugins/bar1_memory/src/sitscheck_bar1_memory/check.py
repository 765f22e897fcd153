"""The `bar1_memory` check's declarations: all the rest of sitscheck knows about it.

Registered through the entry point `bar1_memory = "sitscheck_bar1_memory.check:Bar1MemoryCheck"`
(group `sitscheck.checks`). This module imports only `sitscheck.contract`: listing checks and
starting up import none of the check's work (`impl`, loaded when the check runs).
"""

from __future__ import annotations

from sitscheck.contract import EvidenceSpec, Layer, LazyCheck, MetricSpec, NvmlRead

# The one NVML call the check reads, for every GPU: nvmlBAR1Memory_t (bytes), recorded in each
# GPU's record of nvml.json as {"bar1Total": ..., "bar1Free": ..., "bar1Used": ...}.
BAR1 = NvmlRead(
    key="bar1_memory",
    function="nvmlDeviceGetBAR1MemoryInfo",
    args=("handle",),
    summary="the BAR1 aperture: total, free and used bytes",
)


class Bar1MemoryCheck(LazyCheck):
    name = "bar1_memory"
    summary = "each GPU's BAR1 aperture (NVML): how much of it is mapped, and whether it is full"
    layer = Layer.RUNTIME
    needs_gpu = True
    metrics = (
        MetricSpec("sitscheck.bar1_memory.used", "By", "BAR1 bytes mapped (hw.id, gpu.index)"),
        MetricSpec("sitscheck.bar1_memory.total", "By", "BAR1 aperture size (hw.id, gpu.index)"),
    )
    codes = "sitscheck_bar1_memory.codes:CODES"
    facts = "sitscheck_bar1_memory.facts:Bar1Facts"
    evidence = EvidenceSpec(
        summary=(
            "NVML nvmlDeviceGetBAR1MemoryInfo for every GPU: the BAR1 aperture's total, used "
            "and free bytes (nvidia-smi -q prints them as BAR1 Memory Usage)"
        ),
        nvml_reads=(BAR1,),
    )
    impl = "sitscheck_bar1_memory.impl:Bar1MemoryImpl"
