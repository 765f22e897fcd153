"""The `gpu_telemetry` check: GPU views (the sampled window) → judge."""

from __future__ import annotations

from sitscheck.contract import EvidenceSpec, LazyCheck, MetricKind, MetricSpec, ProfileKey
from sitscheck.sources.artifacts import GPU_VIEW_COMMANDS
from sitscheck.status import Layer


class GpuTelemetryCheck(LazyCheck):
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
        MetricSpec("sitscheck.gpu.clock", "Hz", "SM and memory clocks, per stat"),
        MetricSpec("sitscheck.gpu.clock.max", "Hz", "maximum SM and memory clocks"),
        MetricSpec("hw.temperature", "Cel", "GPU and memory temperature, per stat"),
        MetricSpec("sitscheck.gpu.temperature.limit", "Cel", "NVML temperature thresholds"),
        MetricSpec("sitscheck.gpu.clock_event.active", "1", "share of samples with a reason"),
        MetricSpec(
            "sitscheck.gpu.violation.time",
            "s",
            "cumulative violation time by policy",
            MetricKind.COUNTER,
        ),
        MetricSpec("hw.gpu.memory.usage", "By", "memory used (v2: reserved apart), per stat"),
        MetricSpec("hw.gpu.memory.limit", "By", "memory size (NVML's total)"),
        MetricSpec(
            "hw.energy", "mJ", "energy consumed since the driver loaded", MetricKind.COUNTER
        ),
        MetricSpec(
            "sitscheck.gpu.nvlink.throughput",
            "By/s",
            "NVLink data throughput over every link, per direction and stat",
        ),
    )
    codes = "sitscheck.checks.gpu_telemetry.codes:CODES"
    facts = "sitscheck.checks.gpu_telemetry.facts:Facts"
    profile_keys = (
        ProfileKey("tdp_w", "number", "board power (TDP) the GPU may draw, W: the power rules"),
        ProfileKey("slowdown_c", "number", "slowdown temperature, C, where NVML gives none"),
        ProfileKey("hbm_bw_gbs", "number", "memory (HBM) bandwidth of the data sheet, GB/s"),
        ProfileKey(
            "nvlink.link_gbs_per_direction",
            "number",
            "NVLink bandwidth of one link in one direction, GB/s (NVLink 3/4: 25, NVLink 5: 50)",
        ),
    )
    evidence = EvidenceSpec(
        summary=(
            "NVML samples over the window: utilization, power against the limit, clocks, clock "
            "event reasons, temperatures against NVML's thresholds, GPM SM/tensor/DRAM activity, "
            "memory used and its size, the energy counter, NVLink throughput (GPM, else the "
            "NVLink throughput counters at both ends of the window)"
        ),
        commands=GPU_VIEW_COMMANDS,
        nvml=(
            "samples",
            "gpm",
            "power",
            "temperature",
            "clocks_max_mhz",
            "violations_ns_start",
            "violations_ns_end",
            "sampled_s",
            "counters_s",
            "energy_mj_start",
            "energy_mj_end",
            "nvlink",
            "nvlink_throughput_kib_start",
            "nvlink_throughput_kib_end",
        ),
    )
    impl = "sitscheck.checks.gpu_telemetry.judge:WORK"
