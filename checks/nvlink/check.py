"""The `nvlink` check: GPU views (per-link state and error counters) → judge."""

from __future__ import annotations

from sitscheck.contract import EvidenceSpec, LazyCheck, MetricSpec, ProfileKey
from sitscheck.sources.artifacts import GPU_VIEW_COMMANDS
from sitscheck.status import Layer


class NvlinkCheck(LazyCheck):
    name = "nvlink"
    summary = "every NVLink active; replay/recovery/CRC counters not growing"
    layer = Layer.HARDWARE
    needs_gpu = True
    metrics = (
        MetricSpec("sitscheck.nvlink.links", "{link}", "NVLinks by state (active, inactive)"),
        MetricSpec("hw.errors", "{error}", "NVLink error counter totals (error.type)"),
    )
    codes = "sitscheck.checks.nvlink.codes:CODES"
    facts = "sitscheck.checks.nvlink.facts:Facts"
    profile_keys = (ProfileKey("nvlink.links", "integer", "NVLinks each GPU reports (H200: 18)"),)
    evidence = EvidenceSpec(
        summary=(
            "NVML per-link state (active, version, remote bus id) and error counters over the "
            "window"
        ),
        commands=GPU_VIEW_COMMANDS,
        nvml=("nvlink", "counters_s"),
    )
    impl = "sitscheck.checks.nvlink.judge:WORK"
