"""The `nvlink` check: GPU views (per-link state and error counters) → judge."""

from __future__ import annotations

from sitscheck.check import LazyCheck, MetricSpec
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
    impl = "sitscheck.checks.nvlink.judge:WORK"
