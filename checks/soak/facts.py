"""The `soak` check's facts (facts.md, "Acceptance checks"): statistics over the steady state."""

from __future__ import annotations

from sitscheck.contract.facts import FactsModel


class Power(FactsModel):
    median: float | None
    p5: float | None


class Clock(FactsModel):
    median: float | None
    p5: float | None
    min: float | None


class Temp(FactsModel):
    max: float | None
    slope_last30_c_per_min: float | None


class MemoryTemp(FactsModel):
    max: float | None


class Reasons(FactsModel):
    gpu_idle: float
    applications_clocks_setting: float
    sw_power_cap: float
    hw_slowdown: float
    sync_boost: float
    sw_thermal_slowdown: float
    hw_thermal_slowdown: float
    hw_power_brake_slowdown: float


class Iteration(FactsModel):
    p50: float | None
    p99: float | None
    cv: float | None


class Tflops(FactsModel):
    median: float | None
    p1: float | None


class Gpu(FactsModel):
    gpu: int
    uuid: str | None
    pci_bus_id: str | None
    seconds: float | None
    samples: int
    steady_from_s: float | None
    power_w: Power
    power_limit_w: float | None
    sm_clock_mhz: Clock
    temp_c: Temp
    memory_temp_c: MemoryTemp
    reasons_s: Reasons | None
    iteration_ms: Iteration
    tflops: Tflops


class Facts(FactsModel):
    engine: str | None
    gpus: list[Gpu]
