"""Turn check results and verdicts into the report: status, headline, cause-first order."""

from __future__ import annotations

import socket
from datetime import datetime

from . import __version__
from .models import CheckResult, Report, Status, Verdict, worst


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
        out.append(verdict.model_copy(update={"explained_by": causes}) if causes else verdict)
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
) -> Report:
    linked = mark_explanations(verdicts)
    status = overall_status(results, linked)
    return Report(
        sitscheck_version=__version__,
        host=host or socket.gethostname(),
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
