"""The terminal report: a rich table on a TTY, plain aligned text otherwise.

Order follows the diagnosis: the headline first, then root causes (verdicts that explain
others) with their symptoms under them, then each check. `verbose` adds evidence and facts
counts; the report never hides a check that could not run.

Every line is made printable (`sitscheck.printable`) as it is shown: messages, "Last:" texts,
evidence excerpts and bundle paths come from the node's logs and files, and a raw escape
sequence, carriage return or bidi control in them could rewrite what the terminal shows. On a
terminal each cell is plain text too (rich never reads a log line's brackets as markup).
"""

from __future__ import annotations

import io
from typing import NamedTuple

from ..models import CheckResult, Device, Finding, Layer, Report, Status, Verdict
from ..printable import printable, printable_lines

_LAYER_ORDER = {Layer.HARDWARE: 0, Layer.DRIVER: 1, Layer.RUNTIME: 2}
_MARK = {
    Status.OK: "ok",
    Status.WARNING: "WARN",
    Status.CRITICAL: "CRIT",
    Status.UNKNOWN: "UNKNOWN",
    Status.SKIPPED: "skip",
}
_STYLE = {
    Status.OK: "green",
    Status.WARNING: "yellow",
    Status.CRITICAL: "bold red",
    Status.UNKNOWN: "magenta",
    Status.SKIPPED: "dim",
}


def render_table(report: Report, verbose: bool = False) -> str:
    """The `table` reporter: rich on a terminal, plain text otherwise."""
    import sys

    return render_rich(report, verbose) if sys.stdout.isatty() else render_text(report, verbose)


def render_text(report: Report, verbose: bool = False) -> str:
    lines = [report.headline, context(report), ""]
    lines.extend(_diagnosis_lines(report))
    lines.append("checks:")
    for check in report.checks:
        lines.extend(_check_lines(check, verbose))
    unjudged = [v for v in report.verdicts if v.status == Status.UNKNOWN]
    if unjudged:
        lines.append("")
        lines.append("not judged:")
        lines.extend(f"  {v.rule}{_on(v)}: {v.reason}" for v in unjudged)
    return "\n".join(printable(line) for line in lines).rstrip() + "\n"


def render_rich(report: Report, verbose: bool = False, width: int | None = None) -> str:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=width or terminal_width())
    console.print(Text(printable(report.headline), style=_STYLE[report.status]))
    console.print(Text(printable(context(report)), style="dim"))
    for line in _diagnosis_lines(report):
        console.print(Text(printable(line)))
    table = Table(show_header=True, header_style="bold", expand=False)
    for column in ("check", "status", "time", "details"):
        table.add_column(column)
    for check in report.checks:
        details = "\n".join(printable(line.strip()) for line in _check_lines(check, verbose)[1:])
        table.add_row(
            Text(printable(check.name)),
            Text(_MARK[check.status], style=_STYLE[check.status]),
            f"{check.duration_s:.2f}s",
            Text(details),
        )
    console.print(table)
    return buffer.getvalue()


def terminal_width() -> int:
    """The terminal's columns (COLUMNS, else the terminal, else 100), at least 60."""
    import shutil

    return max(shutil.get_terminal_size((100, 24)).columns, 60)


def context(report: Report) -> str:
    where = "live"
    if report.bundle:
        recorded = f", recorded {report.bundle_recorded_at}" if report.bundle_recorded_at else ""
        where = f"bundle {report.bundle} (replayed{recorded})"
    profile = report.profile or "no profile"
    return (
        f"host {report.host} · {where} · {profile} · {report.duration_s:.2f}s · {report.started_at}"
    )


class Cause(NamedTuple):
    """A fired verdict that nothing else explains, with what it explains on its GPU."""

    root: Verdict
    symptoms: list[Verdict]
    findings: list[Finding]


def diagnosis(report: Report) -> list[Cause]:
    """The fired verdicts, root causes first (hardware, then driver, then runtime; the worst
    first within a layer), each with the verdicts and findings it explains."""
    fired = [v for v in report.verdicts if v.status in (Status.WARNING, Status.CRITICAL)]
    roots = [v for v in fired if not v.explained_by]
    roots.sort(key=lambda v: (_LAYER_ORDER[v.layer], -v.status.rank))
    return [
        Cause(
            root,
            [s for s in fired if root.rule in s.explained_by and _same_gpu(root, s.device)],
            [
                finding
                for check in report.checks
                for finding in check.findings
                if finding.code in root.explains and _same_gpu(root, finding.device)
            ],
        )
        for root in roots
    ]


def _diagnosis_lines(report: Report) -> list[str]:
    causes = diagnosis(report)
    if not causes:
        return []
    lines = ["diagnosis (root cause first):"]
    for root, symptoms, findings in causes:
        lines.append(f"  [{_MARK[root.status]}] {root.layer.value}: {root.message}{_on(root)}")
        if root.action:
            lines.append(f"      action: {root.action}")
        for symptom in symptoms:
            mark = _MARK[symptom.status]
            lines.append(f"      explains [{mark}] {symptom.message}{_on(symptom)}")
        for finding in findings:
            lines.append(
                f"      explains [{finding.severity.value}] {finding.code}: {finding.message}"
            )
    lines.append("")
    return lines


def _check_lines(check: CheckResult, verbose: bool) -> list[str]:
    """A check's line: its status is the worst of its own findings and of the rule verdicts on
    its facts (see `assemble`); when the verdicts raised it, the line says so."""
    head = f"  [{_MARK[check.status]}] {check.name} ({check.duration_s:.2f}s)"
    lines = [head]
    if check.skip_reason:
        lines.append(f"      skipped: {check.skip_reason}")
    if check.error:
        lines.append(f"      error: {check.error}")
    if check.status in (Status.WARNING, Status.CRITICAL) and not check.error:
        own = [f for f in check.findings if f.severity.as_status() == check.status]
        if not own:
            lines.append(
                f"      {check.status.value}: from the rule verdicts on its facts (diagnosis above)"
            )
    for finding in check.findings:
        lines.extend(_finding_lines(finding, verbose))
    for note in check.not_judged:
        lines.append(f"      not judged: {note}")
    if verbose and check.metrics:
        lines.append(f"      metrics: {len(check.metrics)}")
    return lines


def _finding_lines(finding: Finding, verbose: bool) -> list[str]:
    where = device_label(finding.device)
    device = f" [{where}]" if where else ""
    lines = [f"      {finding.severity.value}: {finding.code}{device}: {finding.message}"]
    return lines + finding_details(finding, verbose, "        ", excerpt_rows=10)


def finding_details(finding: Finding, verbose: bool, indent: str, excerpt_rows: int) -> list[str]:
    """The lines under a finding's headline: its action, and (verbose) its evidence with the
    first `excerpt_rows` rows of each excerpt."""
    lines = [f"{indent}action: {finding.action}"] if finding.action else []
    if verbose:
        for evidence in finding.evidence:
            ref = f" {evidence.ref}" if evidence.ref else ""
            lines.append(f"{indent}evidence: {evidence.source}{ref}")
            if evidence.excerpt:  # rows split at newlines only: a CR is shown, never obeyed
                rows = printable_lines(evidence.excerpt)[:excerpt_rows]
                lines.extend(f"{indent}  | {row}" for row in rows)
    return lines


def device_label(device: Device | None) -> str:
    """What a finding or verdict is about, as `GPU 0 00000000:19:00.0` ("" for the node)."""
    if device is None:
        return ""
    parts = [f"GPU {device.index}" if device.index is not None else None, device.pci_bus_id]
    return " ".join(p for p in parts if p)


def _on(verdict: Verdict) -> str:
    if verdict.device is None:
        return ""
    bus = f" {verdict.device.pci_bus_id}" if verdict.device.pci_bus_id else ""
    return f" (GPU {verdict.device.index}{bus})"


def _same_gpu(root: Verdict, device: Device | None) -> bool:
    """A root cause on one GPU explains only that GPU's symptoms; a node-wide one explains all."""
    if root.device is None or device is None:
        return True
    return root.device.index == device.index
