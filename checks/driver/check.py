"""The `driver` check: sources → inventory → findings."""

from __future__ import annotations

from sitscheck.check import LazyCheck, MetricSpec
from sitscheck.status import Layer


class DriverCheck(LazyCheck):
    name = "driver"
    summary = "the NVIDIA driver answers and lists every expected GPU; versions agree"
    layer = Layer.DRIVER
    needs_gpu = True
    metrics: tuple[MetricSpec, ...] = (
        MetricSpec("sitscheck.gpu.count", "{gpu}", "GPUs the driver lists"),
    )
    impl = "sitscheck.checks.driver.impl:DriverImpl"
