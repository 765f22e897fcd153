"""Run the selected checks concurrently, each under its own deadline and the run's deadline.

Each check runs on a daemon thread: one that overruns is reported UNKNOWN ("timed out") and
abandoned, never waited on, so a hung probe costs its deadline and nothing more. Each check's
work runs under a `Scope` holding its deadline, so the commands it starts end before it, and a
check that still times out is named with the command it was waiting on. A check whose thread
the system refuses (`ulimit -v`, a thread limit) is UNKNOWN with that reason; the others run.
"""

from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from ..config import RunConfig
from ..errors import ProbeError
from ..kernlog.scan import KernelLogPass, declared_interests
from ..models import CheckResult, Finding, Layer, Metric, Severity, Status, worst
from ..sources.base import Sources
from ..sources.scope import InFlight, Scope, entered
from ..threads import CannotStart, start_daemon
from . import Check, CheckContext, CheckOutput
from .declarations import Declaration, declaration_of
from .identity import duplicated_identities, gpu_records
from .registry import BrokenCheck


@dataclass
class _Slot:
    """One check in a run: deadline, thread, scope, and its output, crash or reason skipped."""

    check: Check
    deadline: float
    kernel_pass: KernelLogPass | None
    settings: Any = None
    scope: Scope = field(default_factory=lambda: Scope(0.0))
    thread: threading.Thread | None = None  # None until it started (or when it could not)
    output: CheckOutput | None = None
    crash: str | None = None
    skip: str | None = None
    duration_s: float = 0.0


def run_checks(
    checks: list[Check | BrokenCheck],
    sources: Sources,
    config: RunConfig,
    settings: dict[str, Any] | None = None,
    deadline: float | None = None,
) -> list[CheckResult]:
    """`settings`: each check's validated config section (`contract.settings`). `deadline`:
    the run's (monotonic), when the run began before the checks (a bundle was unpacked
    first); by default `run_timeout_s` from now."""
    started = time.monotonic()
    run_deadline = deadline if deadline is not None else started + config.run_timeout_s
    results: dict[str, CheckResult] = {}
    slots: list[_Slot] = []
    interests = declared_interests(checks)
    kernel_pass = KernelLogPass(sources, interests) if interests else None
    in_flight = InFlight()
    for check in checks:
        if isinstance(check, BrokenCheck):
            results[check.name] = CheckResult(
                name=check.name, status=Status.UNKNOWN, error=check.error
            )
            continue
        if time.monotonic() >= run_deadline:
            results[check.name] = _not_started(check, sources)
            continue
        check_deadline = min(time.monotonic() + config.check_timeout_s, run_deadline)
        slots.append(
            _Slot(
                check,
                check_deadline,
                kernel_pass if check.name in interests else None,
                (settings or {}).get(check.name),
                Scope(check_deadline, run=in_flight),
            )
        )
    for slot in slots:
        try:
            slot.thread = start_daemon(
                _execute, slot, sources, config, name=f"check-{slot.check.name}"
            )
        except CannotStart as exc:
            slot.crash = f"not started: {exc}"
    for slot in slots:
        if slot.thread is not None:
            slot.thread.join(timeout=max(slot.deadline - time.monotonic(), 0.0))
        results[slot.check.name] = _result(slot, time.monotonic() - started)
    return [results[c.name] for c in checks]


def _not_started(check: Check, sources: Sources) -> CheckResult:
    """The run's deadline passed before the check could start (what took the time is named:
    an unpacking of the bundle that did not finish)."""
    why = getattr(sources, "unfinished", None)
    return CheckResult(
        name=check.name,
        layer=check.layer,
        status=Status.UNKNOWN,
        error="not started: the run's deadline had passed" + (f" ({why})" if why else ""),
    )


def _execute(slot: _Slot, sources: Sources, config: RunConfig) -> None:
    """On the check's own thread, under its deadline: decide whether it applies, then run it."""
    with entered(slot.scope):
        _run_check(slot, sources, config)


def _run_check(slot: _Slot, sources: Sources, config: RunConfig) -> None:
    began = time.monotonic()
    try:
        slot.skip = slot.check.applicable(sources, config)
    except Exception as exc:  # a ProbeError names itself (a refused thread, a signal)
        named = str(exc) if isinstance(exc, ProbeError) else f"{type(exc).__name__}: {exc}"
        slot.crash = f"could not decide whether it applies: {named}"
        slot.duration_s = time.monotonic() - began
        return
    if slot.skip is not None:
        return
    try:
        declaration = declaration_of(slot.check)
        context = CheckContext(
            sources,
            config,
            slot.deadline,
            name=slot.check.name,
            kernel_pass=slot.kernel_pass,
            settings=slot.settings,
            nvml_reads=declaration.evidence.nvml_reads,
        )
        output = slot.check.collect(context)
        slot.output = _declared(_validated(output, slot.check.name), declaration)
    except ProbeError as exc:
        slot.crash = str(exc)
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1:]
        where = f" at {frame[0].filename.rsplit('/', 1)[-1]}:{frame[0].lineno}" if frame else ""
        slot.crash = f"internal error{where}: {type(exc).__name__}: {exc}"
    slot.duration_s = time.monotonic() - began


def _validated(output: object, name: str) -> CheckOutput:
    """A plugin's output, checked on its own thread: a wrong type is that check's error only."""
    if not isinstance(output, CheckOutput):
        raise TypeError(f"check {name} returned {type(output).__name__}, not a CheckOutput")
    for item in output.findings:
        if not isinstance(item, Finding):
            raise TypeError(f"check {name} returned a finding of type {type(item).__name__}")
    for metric in output.metrics:
        if not isinstance(metric, Metric):
            raise TypeError(f"check {name} returned a metric of type {type(metric).__name__}")
    return output


def _declared(output: CheckOutput, declaration: Declaration) -> CheckOutput:
    """Each finding gets its code's kind, action category (and action, where the check gave
    none) and each metric its kind, from the check's declarations. A code or metric the check
    does not declare is the check's error (UNKNOWN): the contract is its declarations."""
    undeclared: list[str] = []
    for finding in output.findings:
        spec = declaration.codes.get(finding.code)
        if spec is None:
            undeclared.append(f"finding code {finding.code}")
            continue
        finding.kind = spec.kind.value
        finding.action_category = spec.category.value
        if finding.action is None:
            finding.action = spec.action
    kinds = {spec.name: spec.kind.value for spec in declaration.metrics}
    for metric in output.metrics:
        kind = kinds.get(metric.name)
        if kind is None:
            undeclared.append(f"metric {metric.name}")
        else:
            metric.kind = kind  # type: ignore[assignment]
    problems = duplicated_identities(gpu_records(output.facts))
    if undeclared:
        problems.append("not declared by the check: " + ", ".join(sorted(set(undeclared))))
    if problems:
        output.error = "; ".join([*([output.error] if output.error else []), *problems])
    return output


def _result(slot: _Slot, elapsed: float) -> CheckResult:
    check = slot.check
    if slot.thread is not None and slot.thread.is_alive():
        waited = slot.scope.waiting_on()
        return CheckResult(
            name=check.name,
            layer=check.layer,
            status=Status.UNKNOWN,
            duration_s=round(elapsed, 3),
            error=f"timed out: no result within its deadline ({elapsed:.1f}s)"
            + (f" while waiting on {waited}" if waited else ""),
        )
    if slot.skip is not None:
        return CheckResult(
            name=check.name, layer=check.layer, status=Status.SKIPPED, skip_reason=slot.skip
        )
    if slot.output is None:
        return CheckResult(
            name=check.name,
            layer=check.layer,
            status=Status.UNKNOWN,
            duration_s=round(slot.duration_s, 3),
            error=slot.crash or "no result",
        )
    out = slot.output
    return CheckResult(
        name=check.name,
        layer=check.layer,
        status=status_of(out.findings, out.error),
        duration_s=round(slot.duration_s, 3),
        error=out.error,
        findings=out.findings,
        metrics=out.metrics,
        facts=out.facts,
        not_judged=out.not_judged,
        series=out.series,
    )


def status_of(findings: list[Finding], error: str | None) -> Status:
    statuses = [f.severity.as_status() for f in findings]
    if error is not None:
        statuses.append(Status.UNKNOWN)
    return worst(statuses, Status.OK)


__all__ = ["Layer", "Severity", "run_checks", "status_of"]
