"""The check contract: what a check provides and what it hands back.

A check is any object with these attributes (a Protocol, not a base class): built-ins and
third-party plugins register the same way, through the `sitscheck.checks` entry points, and
declare the same things (`declarations`). A check reaches the host only through `ctx`; it
never renders and never decides thresholds (rules do): it returns facts, metrics and the
findings that need no threshold.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from msgspec import Struct, field

from ..errors import ProbeTimeout
from ..status import Layer
from .declarations import (
    CodeTable,
    EvidenceSpec,
    KernelLogInterest,
    MetricSpec,
    NvmlRead,
    ProfileKey,
    resolve,
)

if TYPE_CHECKING:  # the report model is not needed to list or load checks
    from ..config import RunConfig
    from ..kernlog.scan import KernelLogPass, KernelLogResult
    from ..models import Finding, Metric, Series
    from ..sources.base import Sources
    from .nvml_readings import NvmlReadings


class CheckOutput(Struct):
    """What a check's `collect` hands back: findings, metrics, facts, not judged, or an error;
    an active check also its per-device time series (what reporters draw)."""

    findings: list[Finding] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    not_judged: list[str] = field(default_factory=list)
    error: str | None = None
    series: list[Series] = field(default_factory=list)  # an active check's trace, per device


class CheckContext(Struct, frozen=True):
    """What a running check may use: the node's evidence, the run's settings, its deadline,
    its own config section, its share of the one kernel-log pass and its declared NVML
    readings."""

    sources: Sources
    config: RunConfig
    deadline: float
    name: str = ""
    kernel_pass: KernelLogPass | None = None
    settings: Any = None  # the check's own config section (its declared model), or None
    nvml_reads: tuple[NvmlRead, ...] = ()  # what the check declared (`EvidenceSpec.nvml_reads`)

    def remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def ensure_time(self, what: str) -> None:
        if self.remaining() <= 0:
            raise ProbeTimeout(f"deadline passed before {what}")

    def kernel_log(self) -> KernelLogResult:
        """This check's handler result from the run's one kernel-log pass (made on first ask,
        shared by every check that declared an interest)."""
        if self.kernel_pass is None:
            raise ProbeTimeout(f"check {self.name} declared no kernel-log interest")
        return self.kernel_pass.result_for(self.name)

    def nvml_readings(self) -> NvmlReadings:
        """Every GPU's readings of the NVML calls this check declared, each with its state
        (live: made with the run's one NVML snapshot; replayed: read from nvml.json)."""
        from .nvml_readings import readings_of

        return readings_of(self.sources, self.nvml_reads)


def kernel_log_skip(sources: Sources) -> str | None:
    """`applicable` of a check that reads only the kernel log: a live node always has one (one
    that cannot be read is UNKNOWN, never skipped); a bundle without one is skipped, saying so;
    a bundle's log that is there but cannot be read (a FIFO) is UNKNOWN with the reason."""
    if sources.mode == "live":
        return None
    stream = sources.kernel_log()
    return f"no kernel log: {stream.reason}" if stream.lines is None and stream.absent else None


@runtime_checkable
class Check(Protocol):
    """The attributes every check has. Optional declarations (`evidence`, `kernel_log`,
    `codes`, `facts`, `config`, `profile_keys`) are read with `declaration_of`; `BaseCheck`
    gives their defaults."""

    name: str
    summary: str
    layer: Layer
    needs_gpu: bool
    metrics: tuple[MetricSpec, ...]

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        """None when the check can run; otherwise why it is skipped."""
        ...

    def collect(self, ctx: CheckContext) -> CheckOutput: ...


class BaseCheck:
    """Defaults for a check's declarations; a plugin subclasses it and sets what it has."""

    name: str
    summary: str
    layer: Layer = Layer.RUNTIME
    needs_gpu: bool = False
    metrics: tuple[MetricSpec, ...] = ()
    evidence: EvidenceSpec = EvidenceSpec()
    kernel_log: KernelLogInterest | None = None
    codes: CodeTable | str | None = None
    facts: str | None = None
    config: str | None = None
    profile_keys: tuple[ProfileKey, ...] = ()

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        return None


class LazyCheck(BaseCheck):
    """The class that registers carries only the declarations, and the work (`impl`,
    "module:attribute" naming a class or an object with `applicable`/`collect`) is imported
    when the check runs, so listing checks and starting up import no check code."""

    impl: str

    def _target(self) -> Any:
        target = resolve(self.impl)
        return target() if isinstance(target, type) else target

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        reason: str | None = self._target().applicable(sources, config)
        return reason

    def collect(self, ctx: CheckContext) -> CheckOutput:
        output: CheckOutput = self._target().collect(ctx)
        return output
