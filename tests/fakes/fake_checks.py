"""Small check classes implementing the `sitscheck.contract.Check` protocol, for runner tests."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput, Codes, CodeSpec, MetricSpec
from sitscheck.errors import ProbeError
from sitscheck.models import Finding, Layer, Severity
from sitscheck.sources.base import Sources


@dataclass
class FakeCheck:
    """Returns `output` after `sleep_s`; records the thread it ran on."""

    name: str
    output: CheckOutput = field(default_factory=CheckOutput)
    sleep_s: float = 0.0
    skip: str | None = None
    summary: str = "a fake check"
    layer: Layer = Layer.RUNTIME
    needs_gpu: bool = False
    metrics: tuple[MetricSpec, ...] = ()
    ran_on: list[str] = field(default_factory=list)
    declare_output: bool = True  # declare the codes and metrics `output` holds (the contract)

    def __post_init__(self) -> None:
        if self.declare_output and isinstance(self.output, CheckOutput):
            named = {m.name: MetricSpec(m.name, m.unit, "fake") for m in self.output.metrics}
            self.metrics = (*self.metrics, *named.values())

    @property
    def codes(self) -> Codes:
        if not self.declare_output or not isinstance(self.output, CheckOutput):
            return Codes(())
        specs = {  # one code a table: two findings may share one
            f.code: CodeSpec(f.code, f.severity, "a fake finding", "none")
            for f in self.output.findings
            if hasattr(f, "code")
        }
        return Codes(specs.values())

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        return self.skip

    def collect(self, ctx: CheckContext) -> CheckOutput:
        self.ran_on.append(threading.current_thread().name)
        time.sleep(self.sleep_s)
        return self.output


@dataclass
class HangingCheck(FakeCheck):
    """Never returns until `gate` is set (set it at teardown); records its deadline."""

    gate: threading.Event = field(default_factory=threading.Event)
    deadlines: list[float] = field(default_factory=list)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        self.deadlines.append(ctx.deadline)
        self.gate.wait()
        return self.output


@dataclass
class MeetingCheck(FakeCheck):
    """Returns once every check sharing its `barrier` has reached it: checks run one after
    another never meet (the first waits out its deadline)."""

    barrier: threading.Barrier = field(default_factory=lambda: threading.Barrier(1))

    def collect(self, ctx: CheckContext) -> CheckOutput:
        self.barrier.wait(timeout=ctx.remaining())
        return self.output


@dataclass
class RaisingCheck(FakeCheck):
    error: Exception = field(default_factory=lambda: RuntimeError("boom"))

    def collect(self, ctx: CheckContext) -> CheckOutput:
        raise self.error


@dataclass
class CrashingApplicability(FakeCheck):
    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        raise OSError("sysfs vanished")


def finding(code: str, severity: Severity) -> Finding:
    return Finding(code=code, severity=severity, message=code)


__all__ = [
    "CrashingApplicability",
    "FakeCheck",
    "HangingCheck",
    "ProbeError",
    "RaisingCheck",
    "finding",
]
