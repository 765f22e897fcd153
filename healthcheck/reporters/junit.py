"""The JUnit XML reporter, for image-validation pipelines (Jenkins, GitLab, Buildkite...).

One `<testsuite name="sitscheck.checks">` with one `<testcase>` per check, and one
`<testsuite name="sitscheck.rules">` with one per rule verdict (per GPU for GPU-scope rules):

- ok → passed; warning or critical → `<failure type="warning|critical">` whose text lists the
  findings (code, device, message, action; evidence with `verbose`);
- unknown → `<error>` (the check could not establish health: its error, or why not judged);
- skipped → `<skipped message="why">`.

The run's context (host, status, version, profile, bundle, headline) is in `<properties>`.
Every text and attribute is made printable (`sitscheck.printable`, newlines kept in texts):
text from the node (kernel-log excerpts, messages) can hold characters XML 1.0 cannot hold
(ESC, NUL) or that a CI page would obey (a CR, bidi controls); they are shown escaped.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ..models import CheckResult, Finding, Report, Status, Verdict
from ..printable import printable, printable_text
from .table import finding_details


def render_junit(report: Report, verbose: bool = False) -> str:
    root = ET.Element("testsuites", name="sitscheck")
    checks = _suite(root, "sitscheck.checks", report)
    for check in report.checks:
        _check_case(checks, check, verbose)
    rules = _suite(root, "sitscheck.rules", report)
    for verdict in report.verdicts:
        _verdict_case(rules, verdict)
    for suite in (checks, rules):
        _count(suite)
    _count(root, suites=[checks, rules])
    root.set("time", _seconds(report.duration_s))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + body + "\n"


def _suite(root: ET.Element, name: str, report: Report) -> ET.Element:
    suite = ET.SubElement(
        root,
        "testsuite",
        name=name,
        hostname=printable(report.host),
        timestamp=report.started_at,
        time=_seconds(report.duration_s),
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (
        ("status", report.status.value),
        ("headline", report.headline),
        ("sitscheck_version", report.sitscheck_version),
        ("mode", report.mode),
        ("profile", report.profile),
        ("bundle", report.bundle),
    ):
        if value is not None:
            ET.SubElement(props, "property", name=key, value=printable(value))
    return suite


def _check_case(suite: ET.Element, check: CheckResult, verbose: bool) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        classname=f"sitscheck.checks.{check.layer.value}",
        name=printable(check.name),
        time=_seconds(check.duration_s),
    )
    if check.status == Status.SKIPPED:
        ET.SubElement(case, "skipped", message=printable_text(check.skip_reason or "skipped"))
        return
    if check.status == Status.UNKNOWN:
        reason = check.error or "; ".join(check.not_judged) or "health could not be established"
        error = ET.SubElement(case, "error", type="unknown", message=printable_text(reason))
        error.text = printable_text(_findings_text(check.findings, verbose) or reason)
        return
    if check.status in (Status.WARNING, Status.CRITICAL):
        problems = [f for f in check.findings if f.severity.as_status() == check.status]
        failure = ET.SubElement(
            case,
            "failure",
            type=check.status.value,
            message=printable_text(_one_line(problems[0]) if problems else check.status.value),
        )
        failure.text = printable_text(_findings_text(check.findings, verbose))
    if check.not_judged or (check.status == Status.OK and check.findings):
        out = ET.SubElement(case, "system-out")
        lines = [f"not judged: {note}" for note in check.not_judged]
        if check.status == Status.OK:
            lines.append(_findings_text(check.findings, verbose))
        out.text = printable_text("\n".join(line for line in lines if line))


def _verdict_case(suite: ET.Element, verdict: Verdict) -> None:
    name = verdict.rule
    if verdict.device is not None and verdict.device.index is not None:
        name = f"{verdict.rule}[gpu{verdict.device.index}]"
    case = ET.SubElement(
        suite, "testcase", classname=f"sitscheck.rules.{verdict.layer.value}", name=printable(name)
    )
    if verdict.status == Status.SKIPPED:
        ET.SubElement(case, "skipped", message=printable_text(verdict.reason or "skipped"))
    elif verdict.status == Status.UNKNOWN:
        error = ET.SubElement(
            case, "error", type="unknown", message=printable_text(verdict.reason or "not judged")
        )
        error.text = printable_text(verdict.message)
    elif verdict.status in (Status.WARNING, Status.CRITICAL):
        failure = ET.SubElement(
            case, "failure", type=verdict.status.value, message=printable_text(verdict.message)
        )
        lines = [verdict.message]
        if verdict.action:
            lines.append(f"action: {verdict.action}")
        if verdict.explained_by:
            lines.append(f"explained by: {', '.join(verdict.explained_by)}")
        failure.text = printable_text("\n".join(lines))


def _findings_text(findings: list[Finding], verbose: bool) -> str:
    lines: list[str] = []
    for finding in findings:
        lines.append(f"{finding.severity.value}: {_one_line(finding)}")
        lines.extend(finding_details(finding, verbose, "  ", excerpt_rows=20))
    return "\n".join(lines)


def _one_line(finding: Finding) -> str:
    where = ""
    if finding.device is not None:
        parts = [
            f"GPU {finding.device.index}" if finding.device.index is not None else None,
            finding.device.pci_bus_id,
        ]
        where = " [" + " ".join(p for p in parts if p) + "]"
    return f"{finding.code}{where}: {finding.message}"


def _count(element: ET.Element, suites: list[ET.Element] | None = None) -> None:
    cases = (
        [case for suite in suites for case in suite.iter("testcase")]
        if suites is not None
        else list(element.iter("testcase"))
    )
    element.set("tests", str(len(cases)))
    for tag, attribute in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        element.set(attribute, str(sum(1 for case in cases if case.find(tag) is not None)))


def _seconds(value: float) -> str:
    return f"{value:.3f}"
