"""The check contract: what a plugin provides and what it hands back.

A check is any object with these attributes (a Protocol, not a base class): built-ins and
third-party plugins register the same way, through the `sitscheck.checks` entry points.
A check reaches the host only through `ctx.sources`; it never renders and never decides
thresholds (rules do): it returns facts, metrics and the findings that need no threshold.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .errors import ProbeTimeout
from .status import Layer

if TYPE_CHECKING:  # the report model (pydantic) is not needed to list or load checks
    from .config import RunConfig
    from .models import Finding, Metric
    from .sources.base import Sources


@dataclass(frozen=True, slots=True)
class MetricSpec:
    name: str
    unit: str
    help: str


@dataclass
class CheckOutput:
    findings: list[Finding] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    not_judged: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True)
class CheckContext:
    sources: Sources
    config: RunConfig
    deadline: float

    def remaining(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def ensure_time(self, what: str) -> None:
        if self.remaining() <= 0:
            raise ProbeTimeout(f"deadline passed before {what}")


@runtime_checkable
class Check(Protocol):
    name: str
    summary: str
    layer: Layer
    needs_gpu: bool
    metrics: tuple[MetricSpec, ...]

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        """None when the check can run; otherwise why it is skipped."""
        ...

    def collect(self, ctx: CheckContext) -> CheckOutput: ...


class LazyCheck:
    """For built-in checks: the class that registers carries only the metadata, and the work
    (`impl`, "module:attribute" naming a class or an object with `applicable`/`collect`) is
    imported when the check runs, so listing checks and starting up import no check code."""

    impl: str

    def _target(self) -> Any:
        import importlib

        module, _, attribute = self.impl.partition(":")
        target = getattr(importlib.import_module(module), attribute)
        return target() if isinstance(target, type) else target

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        reason: str | None = self._target().applicable(sources, config)
        return reason

    def collect(self, ctx: CheckContext) -> CheckOutput:
        output: CheckOutput = self._target().collect(ctx)
        return output
