"""Pure: per-GPU telemetry statistics (facts and metrics) from the GPU views."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from msgspec import Struct, structs
from sitscheck.contract import CheckOutput
from sitscheck.gpu.judging import FleetCheck, judge_each
from sitscheck.gpu.readings import number, sample_values, stats
from sitscheck.gpu.view import GpuFleet, GpuView

from .reasons import decode, fractions
from .throughput import DIRECTIONS, Throughput, from_counters, from_gpm

READ_KEYS = (
    "utilization",
    "power",
    "clocks",
    "clocks_max",
    "temperature",
    "clock_event_reasons",
    "gpm",
    "memory",
    "energy",
    "load",  # `run --load`: a GPU the load did not keep busy through the window (`workloads.load`)
)
# NVLink throughput has two sources (GPM, the window's counters): a failed read of one is the
# check's error only where the other gives no rate either.
NVLINK_KEY = "nvlink_throughput"


class Series(Struct, frozen=True):
    """One telemetry statistic: its sample field, its fact, its unavailable key, its metric."""

    sample: str  # the field in each sample (or GPM record)
    fact: str  # the per-GPU fact holding its stats
    key: str  # the snapshot's unavailable key
    words: str
    metric: str
    unit: str
    scale: float
    labels: Mapping[str, str]


SERIES = (
    Series(
        "util_gpu", "util_gpu_pct", "utilization", "GPU utilization",
        "hw.gpu.utilization", "1", 0.01, {"hw.gpu.task": "general"},
    ),
    Series(
        "util_mem", "util_mem_pct", "utilization", "memory controller utilization",
        "sitscheck.gpu.memory_controller.utilization", "1", 0.01, {},
    ),
    Series("power_w", "power_w", "power.draw", "power draw", "hw.power", "W", 1.0, {}),
    Series(
        "sm_clock_mhz", "sm_clock_mhz", "clocks.sm", "SM clock",
        "sitscheck.gpu.clock", "Hz", 1e6, {"clock": "sm"},
    ),
    Series(
        "mem_clock_mhz", "mem_clock_mhz", "clocks.mem", "memory clock",
        "sitscheck.gpu.clock", "Hz", 1e6, {"clock": "memory"},
    ),
    Series(
        "temp_c", "temp_c", "temperature.gpu", "GPU temperature",
        "hw.temperature", "Cel", 1.0, {"hw.sensor_location": "gpu"},
    ),
    Series(
        "mem_temp_c", "mem_temp_c", "temperature.memory", "memory (HBM) temperature",
        "hw.temperature", "Cel", 1.0, {"hw.sensor_location": "memory"},
    ),
    Series(
        "mem_used_bytes", "memory_used_bytes", "memory", "memory used",
        "hw.gpu.memory.usage", "By", 1.0, {},
    ),
)  # fmt: skip
GPM_SERIES = (
    Series(
        "sm_util", "sm_util_pct", "gpm", "GPM SM utilization",
        "sitscheck.gpu.sm.utilization", "1", 0.01, {},
    ),
    Series(
        "sm_occupancy", "sm_occupancy_pct", "gpm", "GPM SM occupancy",
        "sitscheck.gpu.sm.occupancy", "1", 0.01, {},
    ),
    Series(
        "tensor_active", "tensor_active_pct", "gpm", "GPM tensor activity",
        "sitscheck.gpu.tensor.activity", "1", 0.01, {},
    ),
    Series(
        "dram_bw_util", "dram_bw_util_pct", "gpm", "GPM DRAM bandwidth utilization",
        "sitscheck.gpu.dram.bandwidth.utilization", "1", 0.01, {},
    ),
)  # fmt: skip
# snapshot `temperature` thresholds -> facts
THRESHOLDS = (
    ("slowdown_c", "temp_slowdown_c", "slowdown"),
    ("shutdown_c", "temp_shutdown_c", "shutdown"),
    ("gpu_max_c", "temp_gpu_max_c", "gpu_max"),
    ("mem_max_c", "temp_mem_max_c", "memory_max"),
)


def judge(fleet: GpuFleet) -> CheckOutput:
    out = judge_each(fleet, "telemetry", "power.draw", READ_KEYS, _gpu)
    unmeasured = {
        entry["index"]
        for entry in out.facts.get("gpus", [])
        if "nvlink_rx_bytes_per_s" not in entry and not entry.get("lost")
    }
    failed = structs.replace(fleet, gpus=tuple(g for g in fleet.gpus if g.index in unmeasured))
    error = failed.fault_error((NVLINK_KEY,))
    if error is not None:
        out.error = f"{out.error}; {error}" if out.error else error
    return out


def _gpu(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    entry["samples"] = len(gpu.samples)
    if gpu.window_s is not None:
        entry["window_s"] = gpu.window_s
    for series in SERIES:
        _series(gpu, entry, out, series, sample_values(gpu, series.sample))
    _gpm(gpu, entry, out)
    _limits(gpu, entry, out)
    _reasons(gpu, entry, out)
    _violations(gpu, entry, out)
    _memory(gpu, entry, out)
    _energy(gpu, entry, out)
    _nvlink(gpu, entry, out)


def _series(
    gpu: GpuView, entry: dict[str, Any], out: CheckOutput, series: Series, values: list[float]
) -> None:
    summary = stats(values)
    if summary is None:
        out.not_judged.append(f"GPU {gpu.index}: {series.words}: {gpu.why_missing(series.key)}")
        return
    entry[series.fact] = summary
    for stat, value in summary.items():
        out.metrics.append(
            gpu.metric(
                series.metric,
                round(value * series.scale, 6),
                series.unit,
                **series.labels,
                stat=stat,
            )
        )


def _gpm(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    records = gpu.get("gpm")
    if not isinstance(records, list) or not records:
        why = gpu.why_missing("gpm")
        if gpu.source != "nvml":
            why = "needs NVML (Hopper or newer)"
        out.not_judged.append(f"GPU {gpu.index}: GPM metrics: {why}")
        return
    for series in GPM_SERIES:
        values = [
            float(r[series.sample])
            for r in records
            if isinstance(r, dict) and number(r.get(series.sample)) is not None
        ]
        _series(gpu, entry, out, series, values)


def _limits(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    limit = number(gpu.get("power", "enforced_limit_w"))
    if limit is None:
        out.not_judged.append(
            f"GPU {gpu.index}: power against its limit: enforced power limit "
            f"{gpu.why_missing('power.limit')}"
        )
    else:
        entry["power_limit_w"] = limit
        out.metrics.append(gpu.metric("sitscheck.gpu.power.limit", limit, "W"))
    default = number(gpu.get("power", "default_limit_w"))
    if default is not None:
        entry["power_default_limit_w"] = default
    for clock, fact in (("sm", "sm_clock_max_mhz"), ("mem", "mem_clock_max_mhz")):
        value = number(gpu.get("clocks_max_mhz", clock))
        if value is not None:
            entry[fact] = value
            out.metrics.append(
                gpu.metric(
                    "sitscheck.gpu.clock.max",
                    value * 1e6,  # the base unit, as OTLP and Prometheus both carry it
                    "Hz",
                    clock="sm" if clock == "sm" else "memory",
                )
            )
    for key, fact, label in THRESHOLDS:
        value = number(gpu.get("temperature", key))
        if value is None:
            continue
        entry[fact] = value
        out.metrics.append(
            gpu.metric("sitscheck.gpu.temperature.limit", value, "Cel", threshold=label)
        )
    slowdown = entry.get("temp_slowdown_c")
    temp = entry.get("temp_c")
    if slowdown is None:
        out.not_judged.append(
            f"GPU {gpu.index}: slowdown temperature: {gpu.why_missing('temperature.slowdown_c')}"
            " (the rules use the profile's slowdown_c, else params.temp_slowdown_fallback_c)"
        )
    elif isinstance(temp, dict):
        entry["temp_margin_c"] = round(slowdown - temp["max"], 3)


def _reasons(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    masks = [
        int(s["clock_event_reasons"])
        for s in gpu.samples
        if isinstance(s.get("clock_event_reasons"), int)
        and not isinstance(s.get("clock_event_reasons"), bool)
    ]
    shares = fractions(masks)
    if shares is None:
        out.not_judged.append(
            f"GPU {gpu.index}: clock event reasons: {gpu.why_missing('clock_event_reasons')}"
        )
        return
    entry["clock_reasons"] = shares
    seen = 0
    for mask in masks:
        seen |= mask
    entry["clock_reasons_seen"] = decode(seen)
    for reason, share in shares.items():
        out.metrics.append(
            gpu.metric("sitscheck.gpu.clock_event.active", share, "1", reason=reason)
        )


def _violations(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    start, end = gpu.get("violations_ns_start"), gpu.get("violations_ns_end")
    if not isinstance(start, dict) or not isinstance(end, dict):
        out.not_judged.append(f"GPU {gpu.index}: violation times: {gpu.why_missing('violations')}")
        return
    during: dict[str, float] = {}
    for policy, raw in start.items():
        first, last = number(raw), number(end.get(policy))
        if first is None or last is None:
            continue
        during[policy] = round(max(last - first, 0.0) / 1e9, 6)
        out.metrics.append(
            gpu.metric("sitscheck.gpu.violation.time", round(last / 1e9, 6), "s", policy=policy)
        )
    entry["violations_s"] = during


def _memory(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    """The memory's size (the last sample that read it) and what the driver reserves."""
    for sample in reversed(gpu.samples):
        total = number(sample.get("mem_total_bytes"))
        if total is None:
            continue
        entry["memory_total_bytes"] = total
        out.metrics.append(gpu.metric("hw.gpu.memory.limit", total, "By"))
        reserved = number(sample.get("mem_reserved_bytes"))
        if reserved is not None:
            entry["memory_reserved_bytes"] = reserved
        return


def _energy(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    """The energy counter (mJ since the driver loaded) at the window's end, and its growth
    over the window."""
    first, last = number(gpu.get("energy_mj_start")), number(gpu.get("energy_mj_end"))
    latest = last if last is not None else first
    if latest is None:
        out.not_judged.append(f"GPU {gpu.index}: energy: {gpu.why_missing('energy')}")
        return
    entry["energy_total_j"] = round(latest / 1000.0, 3)
    out.metrics.append(gpu.metric("hw.energy", latest, "mJ"))
    if first is not None and last is not None and last >= first:
        entry["energy_window_j"] = round((last - first) / 1000.0, 3)


def _nvlink(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    window, no_window = gpu.rate_window_s()
    found = from_gpm(gpu.get("gpm"), stats) or from_counters(
        gpu.get("nvlink_throughput_kib_start"),
        gpu.get("nvlink_throughput_kib_end"),
        (window, no_window),
        stats,
    )
    if not isinstance(found, Throughput):
        why = found or _why_no_nvlink(gpu)
        out.not_judged.append(f"GPU {gpu.index}: NVLink throughput: {why}")
        return
    entry["nvlink_throughput_source"] = found.source
    for direction, summary in found.stats.items():
        entry[f"nvlink_{direction}_bytes_per_s"] = summary
        for stat, value in summary.items():
            out.metrics.append(
                gpu.metric(
                    "sitscheck.gpu.nvlink.throughput",
                    value,
                    "By/s",
                    **{"network.io.direction": DIRECTIONS[direction]},
                    stat=stat,
                )
            )


def _why_no_nvlink(gpu: GpuView) -> str:
    links = gpu.get("nvlink")
    if "nvlink" in gpu.unavailable or (isinstance(links, list) and not links):
        return f"the GPU has no NVLinks ({gpu.why_missing('nvlink')})"
    if isinstance(links, list) and not any(isinstance(e, dict) and e.get("active") for e in links):
        return "no NVLink is active"
    return gpu.why_missing(NVLINK_KEY)


# What the `gpu_telemetry` check runs (see `sitscheck.check.LazyCheck`).
WORK = FleetCheck(judge)
