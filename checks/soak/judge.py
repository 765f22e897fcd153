"""The `soak` check's work: the steady state's figures per GPU (the verdicts are rules)."""

from __future__ import annotations

from typing import Any

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput, Sources
from sitscheck.contract.phase_record import (
    Entry,
    PhaseRecord,
    applicable,
    finite,
    judge_phase,
    median,
    percentile,
)
from sitscheck.models import Finding, Metric, Severity

from .check import RECORD
from .series import soak_series
from .stats import (
    MIN_SAMPLES,
    STEADY_BAND,
    WARMUP_S,
    iteration_stats,
    load_window,
    reason_seconds,
    slope_c_per_min,
    steady_from,
    summary,
)

SAMPLE_PERIOD_S = 1.0


class SoakImpl:
    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        return applicable(sources, RECORD)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        return judge_phase(ctx, RECORD, "soak.workload_hung", judge)


def judge(record: PhaseRecord, ran: list[Entry]) -> CheckOutput:
    out = CheckOutput(facts={"engine": record.engine, "gpus": []})
    untimed: list[str] = []  # never a pass for what cannot be judged: UNKNOWN
    for entry in ran:
        result = entry.result or {}
        loaded = loaded_samples(result)
        facts = gpu_facts(entry, result, loaded)
        out.facts["gpus"].append(facts)
        out.series.append(soak_series(entry, result, loaded, facts["steady_from_s"]))
        labels = {"gpu": str(entry.index)}
        for name, value, unit in (
            ("sitscheck.accept.soak.tflops", facts["tflops"]["median"], "TFLOP/s"),
            ("sitscheck.accept.soak.power", facts["power_w"]["median"], "W"),
            ("sitscheck.accept.soak.temperature.max", facts["temp_c"]["max"], "Cel"),
        ):
            if value is not None:
                out.metrics.append(Metric(name=name, value=value, unit=unit, labels=labels))
        mismatches = result.get("digest_mismatches") or []
        if mismatches:
            out.findings.append(
                Finding(
                    code="soak.digest_mismatch",
                    severity=Severity.CRITICAL,
                    device=entry.device(),
                    message=f"GPU {entry.index}: silent data corruption suspected under load: the "
                    f"product's digest changed at iteration(s) "
                    f"{', '.join(str(m) for m in mismatches[:5])} of {result.get('iterations')}",
                )
            )
        if facts["seconds"] is None:  # no window of the load: none of its samples is known
            untimed.append(f"GPU {entry.index}: the record holds no seconds (how long the load "
                           "ran): the soak not judged")  # fmt: skip
            continue
        if facts["reasons_s"] is None:
            out.not_judged.append(f"GPU {entry.index}: clock-event reasons not readable")
        if facts["steady_from_s"] is None:
            out.not_judged.append(f"GPU {entry.index}: {_no_steady_state(facts)}: power, clocks, "
                                  "iteration times and TFLOP/s not judged")  # fmt: skip
    out.error = "; ".join(untimed) or None
    return out


def _no_steady_state(facts: dict[str, Any]) -> str:
    if facts["seconds"] < WARMUP_S or facts["samples"] < MIN_SAMPLES:
        return (f"a load of {facts['seconds']:.0f} s and {facts['samples']} samples is too "
                "short for a steady state")  # fmt: skip
    return (f"no steady state: the power or SM clock was still outside ±{STEADY_BAND:.0%} of "
            "its final level at the last sample, or not readable")  # fmt: skip


def loaded_samples(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The soak's samples taken under load, timed from its start (`stats.load_window`); none
    where the record does not say how long the load ran. A record without the load's start on
    the sampler's clock (written before the parent recorded it) is taken to start with it."""
    samples = [s for s in result.get("samples") or [] if isinstance(s, dict)]
    seconds = finite(result.get("seconds"))
    if seconds is None:
        return []
    started = finite(result.get("load_started_s"))
    return load_window(samples, 0.0 if started is None else started, seconds)


def gpu_facts(entry: Entry, result: dict[str, Any], loaded: list[dict[str, Any]]) -> dict[str, Any]:
    """One GPU's soak facts over `loaded` (the load's samples): the clock-event reasons and the
    temperatures over the whole load (a hardware slowdown drops the clocks out of the steady
    band, so the steady state alone would hide it), the rest over the steady state."""
    seconds = finite(result.get("seconds"))
    start = steady_from(loaded)
    steady = [s for s in loaded if start is not None and s["t"] >= start]
    power = _values(steady, "power_w")
    clock = _values(steady, "sm_clock_mhz")
    iterations = iteration_stats(result.get("times") or [], start)
    flops = 2.0 * _cube(result.get("shape"))
    rates = [flops / (ms * 1e-3) / 1e12 for ms in iterations] if flops else []
    return {
        **entry.identity(),
        "seconds": seconds,
        "samples": len(loaded),
        "steady_from_s": start,
        "power_w": {"median": _r(median(power)), "p5": _r(percentile(power, 0.05))},
        "power_limit_w": _r(median(_values(loaded, "power_limit_w"))),
        "sm_clock_mhz": {
            "median": _r(median(clock)),
            "p5": _r(percentile(clock, 0.05)),
            "min": _r(min(clock)) if clock else None,
        },
        "temp_c": {
            "max": _r(max(_values(loaded, "temp_c"), default=None)),
            "slope_last30_c_per_min": slope_c_per_min(loaded),
        },
        "memory_temp_c": {"max": _r(max(_values(loaded, "mem_temp_c"), default=None))},
        "reasons_s": reason_seconds(loaded, SAMPLE_PERIOD_S),
        "iteration_ms": summary(iterations),
        "tflops": {"median": _r(median(rates)), "p1": _r(percentile(rates, 0.01))},
    }


def _values(samples: list[dict[str, Any]], key: str) -> list[float]:
    return [v for v in (finite(s.get(key)) for s in samples) if v is not None]


def _cube(shape: object) -> float:
    if isinstance(shape, list) and len(shape) == 3 and all(isinstance(v, int) for v in shape):
        return float(shape[0] * shape[1] * shape[2])
    return 0.0


def _r(value: float | None) -> float | None:
    return round(value, 2) if value is not None else None
