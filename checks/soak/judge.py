"""The `soak` check's work: the steady state's figures per GPU (the verdicts are rules)."""

from __future__ import annotations

from typing import Any

from sitscheck.accept.records import Entry, PhaseRecord, applicable, judge_phase, median, percentile
from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput, Sources
from sitscheck.models import Finding, Metric, Severity

from .check import RECORD
from .series import soak_series
from .stats import iteration_stats, reason_seconds, slope_c_per_min, steady_from, summary

SAMPLE_PERIOD_S = 1.0


class SoakImpl:
    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        return applicable(sources, RECORD)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        return judge_phase(ctx, RECORD, "soak.workload_hung", judge)


def judge(record: PhaseRecord, ran: list[Entry]) -> CheckOutput:
    out = CheckOutput(facts={"engine": record.engine, "gpus": []})
    for entry in ran:
        result = entry.result or {}
        facts = gpu_facts(entry, result)
        out.facts["gpus"].append(facts)
        out.series.append(soak_series(entry, result, facts["steady_from_s"]))
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
        if facts["reasons_s"] is None:
            out.not_judged.append(f"GPU {entry.index}: clock-event reasons not readable")
    return out


def gpu_facts(entry: Entry, result: dict[str, Any]) -> dict[str, Any]:
    samples = [s for s in result.get("samples") or [] if isinstance(s, dict)]
    start = steady_from(samples)
    steady = [s for s in samples if start is not None and s.get("t", -1) >= start]
    power = _values(steady, "power_w")
    clock = _values(steady, "sm_clock_mhz")
    iterations = iteration_stats(result.get("times") or [], start)
    flops = 2.0 * _cube(result.get("shape"))
    rates = [flops / (ms * 1e-3) / 1e12 for ms in iterations] if flops else []
    limits = _values(samples, "power_limit_w")
    return {
        **entry.identity(),
        "seconds": float(result.get("seconds") or 0.0),
        "samples": len(samples),
        "steady_from_s": start,
        "power_w": {"median": _r(median(power)), "p5": _r(percentile(power, 0.05))},
        "power_limit_w": _r(median(limits)),
        "sm_clock_mhz": {
            "median": _r(median(clock)),
            "p5": _r(percentile(clock, 0.05)),
            "min": _r(min(clock)) if clock else None,
        },
        "temp_c": {
            "max": _r(max(_values(samples, "temp_c"), default=None)),
            "slope_last30_c_per_min": slope_c_per_min(samples),
        },
        "memory_temp_c": {"max": _r(max(_values(samples, "mem_temp_c"), default=None))},
        "reasons_s": reason_seconds(steady, SAMPLE_PERIOD_S),
        "iteration_ms": summary(iterations),
        "tflops": {"median": _r(median(rates)), "p1": _r(percentile(rates, 0.01))},
    }


def _values(samples: list[dict[str, Any]], key: str) -> list[float]:
    return [float(s[key]) for s in samples if isinstance(s.get(key), int | float)]


def _cube(shape: object) -> float:
    if isinstance(shape, list) and len(shape) == 3 and all(isinstance(v, int) for v in shape):
        return float(shape[0] * shape[1] * shape[2])
    return 0.0


def _r(value: float | None) -> float | None:
    return round(value, 2) if value is not None else None
