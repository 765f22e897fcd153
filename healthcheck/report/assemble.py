"""Turn check results and verdicts into the report: status, headline, cause-first order.

A check's status in the report (`Report.checks[].status`, the line of the checks list) is the
worst of what the check itself found (ok, or its worst finding's warning/critical; unknown when
it could not run; skipped when it did not) and of the fired rule verdicts (warning, critical) on
its facts, so that no check reads "ok" under a verdict about a problem in its own facts. A rule
is on the facts of the check it is named after (`pcie_aer.corrected_rate`: pcie_aer's); a
cross-check rule named after no check (`quick_check.*`) is on the facts of every check it
requires. A verdict that could not be judged (unknown) changes no check's status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from msgspec.structs import replace

from .. import __version__
from ..models import CheckResult, Report, Status, Verdict, worst
from ..sources.hostname import node_name

_FIRED = (Status.WARNING, Status.CRITICAL)


def overall_status(results: list[CheckResult], verdicts: list[Verdict]) -> Status:
    statuses = [r.status for r in results] + [v.status for v in verdicts]
    return worst(statuses, Status.OK)


def headline(
    status: Status, results: list[CheckResult], verdicts: list[Verdict], driver_note: str | None
) -> str:
    problems = [
        r.name for r in results if r.status in (Status.WARNING, Status.CRITICAL, Status.UNKNOWN)
    ]
    fired = [v.rule for v in verdicts if v.status in (Status.WARNING, Status.CRITICAL)]
    parts = [f"{status.value.upper()}"]
    if driver_note:
        parts.append(driver_note)
    if problems:
        parts.append("checks: " + ", ".join(problems))
    if fired:
        parts.append("rules: " + ", ".join(dict.fromkeys(fired)))
    ran = sum(1 for r in results if r.status != Status.SKIPPED)
    parts.append(f"{ran} of {len(results)} checks ran")
    return " — ".join(parts)


def mark_explanations(verdicts: list[Verdict]) -> list[Verdict]:
    """Link causes and symptoms: a fired verdict that explains a rule id marks that verdict."""
    fired = [v for v in verdicts if v.status in (Status.WARNING, Status.CRITICAL)]
    out = []
    for verdict in verdicts:
        causes = list(
            dict.fromkeys(
                cause.rule
                for cause in fired
                if verdict.rule in cause.explains
                and (
                    cause.device is None or verdict.device is None or cause.device == verdict.device
                )
            )
        )
        out.append(replace(verdict, explained_by=causes) if causes else verdict)
    return out


def checks_of(rule: str, requires: Sequence[str], names: set[str]) -> set[str]:
    """The checks whose facts a rule's verdicts are on (see the module's docstring)."""
    named = rule.partition(".")[0]
    if named in names:
        return {named}
    return {name for name in requires if name in names}


def with_verdicts(
    results: list[CheckResult],
    verdicts: list[Verdict],
    reads: Mapping[str, Sequence[str]] | None = None,
) -> list[CheckResult]:
    """The results, each with the status of its line: the worst of its own and of the fired
    verdicts on its facts. `reads`: rule id -> the checks it requires (its `requires`)."""
    names = {result.name for result in results}
    raised: dict[str, list[Status]] = {}
    for verdict in verdicts:
        if verdict.status in _FIRED:
            requires = (reads or {}).get(verdict.rule, ())
            for name in checks_of(verdict.rule, requires, names):
                raised.setdefault(name, []).append(verdict.status)
    out = []
    for result in results:
        status = worst([result.status, *raised.get(result.name, [])], result.status)
        same = status == result.status or result.status == Status.SKIPPED
        out.append(result if same else replace(result, status=status))
    return out


def build_report(
    results: list[CheckResult],
    verdicts: list[Verdict],
    started_at: datetime,
    duration_s: float,
    mode: str,
    bundle: str | None,
    profile: str | None,
    host: str | None,
    driver_note: str | None,
    reads: Mapping[str, Sequence[str]] | None = None,
) -> Report:
    """`reads`: rule id -> the checks the rule requires (which checks' lines its verdicts
    raise, for the rules named after no check)."""
    linked = mark_explanations(verdicts)
    results = with_verdicts(results, linked, reads)
    status = overall_status(results, linked)
    return Report(
        sitscheck_version=__version__,
        host=host or node_name(),
        started_at=started_at.isoformat(timespec="seconds"),
        duration_s=round(duration_s, 3),
        status=status,
        headline=headline(status, results, linked, driver_note),
        mode=mode,
        bundle=bundle,
        profile=profile,
        checks=results,
        verdicts=linked,
    )
