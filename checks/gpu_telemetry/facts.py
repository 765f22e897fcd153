"""The `gpu_telemetry` check's facts: per GPU, each series' statistics over the window, the
limits and thresholds, clock event reasons and violation times."""

from __future__ import annotations

from typing import Literal

from sitscheck.contract.facts import FactsModel, FleetFacts, GpuViewFacts, Stats


class ClockReasons(FactsModel):
    """Share of samples (0..1) in which each clock event reason was active (`reasons.py`)."""

    gpu_idle: float
    applications_clocks_setting: float
    sw_power_cap: float
    hw_slowdown: float
    sync_boost: float
    sw_thermal_slowdown: float
    hw_thermal_slowdown: float
    hw_power_brake_slowdown: float
    display_clock_setting: float


class Violations(FactsModel):
    """Seconds each clock-violation policy was in force during the window (NVML's
    nvmlDeviceGetViolationStatus); a policy not read is absent."""

    power: float | None = None
    thermal: float | None = None
    sync_boost: float | None = None
    board_limit: float | None = None
    low_utilization: float | None = None
    reliability: float | None = None


class Gpu(GpuViewFacts):
    """`gpu.gpu_telemetry` in GPU rules; each series only where it was read."""

    samples: int | None = None
    window_s: float | None = None
    util_gpu_pct: Stats | None = None
    util_mem_pct: Stats | None = None
    power_w: Stats | None = None
    sm_clock_mhz: Stats | None = None
    mem_clock_mhz: Stats | None = None
    temp_c: Stats | None = None
    mem_temp_c: Stats | None = None
    # GPM (Hopper or newer, NVML only)
    sm_util_pct: Stats | None = None
    sm_occupancy_pct: Stats | None = None
    tensor_active_pct: Stats | None = None
    dram_bw_util_pct: Stats | None = None
    power_limit_w: float | None = None
    power_default_limit_w: float | None = None
    sm_clock_max_mhz: float | None = None
    mem_clock_max_mhz: float | None = None
    temp_slowdown_c: float | None = None
    temp_shutdown_c: float | None = None
    temp_gpu_max_c: float | None = None
    temp_mem_max_c: float | None = None
    temp_margin_c: float | None = None  # slowdown threshold less the window's highest reading
    clock_reasons: ClockReasons | None = None
    clock_reasons_seen: list[str] | None = None  # reason names (unknown bits as hex)
    violations_s: Violations | None = None
    # frame-buffer memory (nvmlDeviceGetMemoryInfo, v2 where the driver has it), bytes
    memory_used_bytes: Stats | None = None
    memory_total_bytes: float | None = None
    memory_reserved_bytes: float | None = None  # v2 only: kept out of `used`
    # nvmlDeviceGetTotalEnergyConsumption: since the driver loaded, and over the window
    energy_total_j: float | None = None
    energy_window_j: float | None = None
    # NVLink data throughput over every link, bytes/s: GPM's per-interval rates, else one
    # rate from the throughput counters at both ends of the window (`..._source`)
    nvlink_rx_bytes_per_s: Stats | None = None
    nvlink_tx_bytes_per_s: Stats | None = None
    nvlink_throughput_source: Literal["gpm", "counters"] | None = None


class Facts(FleetFacts):
    gpus: list[Gpu]
