"""The `gpu_telemetry` check: GPU views (the sampled window) → judge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitscheck.check import CheckContext, CheckOutput, MetricSpec
from sitscheck.status import Layer

if TYPE_CHECKING:
    from sitscheck.config import RunConfig
    from sitscheck.sources.base import Sources


class GpuTelemetryCheck:
    name = "gpu_telemetry"
    summary = "utilization, power, clocks, clock event reasons and temperatures over a window"
    layer = Layer.RUNTIME
    needs_gpu = True
    metrics = (
        MetricSpec("hw.gpu.utilization", "1", "GPU utilization, per stat"),
        MetricSpec("sitscheck.gpu.memory_controller.utilization", "1", "memory controller busy"),
        MetricSpec("sitscheck.gpu.sm.utilization", "1", "GPM SM utilization"),
        MetricSpec("sitscheck.gpu.sm.occupancy", "1", "GPM SM occupancy"),
        MetricSpec("sitscheck.gpu.tensor.activity", "1", "GPM tensor pipe activity"),
        MetricSpec("sitscheck.gpu.dram.bandwidth.utilization", "1", "GPM DRAM bandwidth use"),
        MetricSpec("hw.power", "W", "power draw, per stat"),
        MetricSpec("sitscheck.gpu.power.limit", "W", "enforced power limit"),
        MetricSpec("sitscheck.gpu.clock", "MHz", "SM and memory clocks, per stat"),
        MetricSpec("sitscheck.gpu.clock.max", "MHz", "maximum SM and memory clocks"),
        MetricSpec("hw.temperature", "Cel", "GPU and memory temperature, per stat"),
        MetricSpec("sitscheck.gpu.temperature.limit", "Cel", "NVML temperature thresholds"),
        MetricSpec("sitscheck.gpu.clock_event.active", "1", "share of samples with a reason"),
        MetricSpec("sitscheck.gpu.violation.time", "s", "cumulative violation time by policy"),
    )

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        from sitscheck import gpu_view

        return gpu_view.skip_unless_driver(sources)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        from sitscheck import gpu_view

        from .judge import judge

        return gpu_view.collect_with(ctx.sources, judge)
