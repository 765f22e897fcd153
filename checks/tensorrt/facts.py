"""The `tensorrt` check's facts: each build log scanned, per GPU what applies to it, and the
optional probe's builds."""

from __future__ import annotations

from msgspec import field
from sitscheck.contract.facts import FactsModel, GpuRefFacts


class BuiltOn(FactsModel):
    gpu: str | None
    sm: str | None


class Fallback(FactsModel):
    """A layer or tactic on a slower path than asked (`parse.Fallback`)."""

    layer: str | None
    reason: str


class PrecisionFallback(FactsModel, kw_only=True):
    """A layer kept at or moved to a higher precision (`parse.PrecisionFallback`)."""

    layer: str | None
    from_: str | None = field(name="from")
    to: str


class Log(FactsModel):
    """One build log (`parse.TrtLog.to_fact`): facts.md's "trt" object and more."""

    file: str
    trt_version: str | None
    built_on: BuiltOn
    fallbacks: list[Fallback]
    precision_fallbacks: list[PrecisionFallback]
    errors: list[str]
    warnings: int
    layers: int | None
    fused: int | None
    build_time_s: float | None
    peak_memory_mib: float | None
    truncated: bool  # a list was capped or a text cut


class ProbeGpu(GpuRefFacts):
    """One GPU's probe build (`probe.GpuProbe.to_fact`)."""

    status: str  # built, failed, timed_out, not_run
    reason: str | None
    duration_s: float
    log: Log


class Probe(FactsModel):
    status: str  # ran, skipped
    reason: str | None
    gpus: list[ProbeGpu]


class Gpu(GpuRefFacts):
    """`gpu.tensorrt` in GPU rules (`judge.gpu_facts`)."""

    fallbacks: int
    precision_fallbacks: int
    engine_mismatch: bool | None  # null: no log applying to it names the GPU it was built on
    logs: list[str]  # the files of the logs that apply to it
    probe_built: bool | None  # null: the probe did not run on it


class Facts(FactsModel):
    logs: list[Log]
    gpus: list[Gpu]
    probe: Probe | None
