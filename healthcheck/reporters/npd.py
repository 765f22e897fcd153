"""The node-problem-detector reporter: one line of at most 80 bytes, and NPD's exit codes.

NPD's custom-plugin monitor runs a program and reads its exit status (0 OK, 1 NonOK, anything
else Unknown) and the first `max_output_length` bytes of its output (80 by default) as the
condition's message. `render_npd` gives that line, ASCII only so bytes and characters agree:
``critical: <root cause>`` — the first root-cause verdict (lowest layer, worst status), else
the worst finding, else what could not be judged; ``ok: N of M checks ran`` when healthy.

`npd_exit_code`: critical → 1 (NonOK), unknown → 2 (Unknown), ok / skipped / warning → 0.
A warning does not set the node condition (it is shown in the message); the CLI uses this
code instead of the Nagios one when `npd` is the output. The same line, after
``sitscheck: ``, is the Slurm drain reason (packaging/slurm/sitscheck-healthcheck).
"""

from __future__ import annotations

import unicodedata

from ..models import Finding, Layer, Report, Status, Verdict
from ..printable import printable

NPD_MAX_BYTES = 80
NPD_OK, NPD_PROBLEM, NPD_UNKNOWN = 0, 1, 2
_LAYER_ORDER = {Layer.HARDWARE: 0, Layer.DRIVER: 1, Layer.RUNTIME: 2}
_ASCII = {
    "—": "-",
    "–": "-",
    "×": "x",
    "→": "->",
    "·": "-",
    "…": "...",
    "‘": "'",
    "’": "'",
    "“": '"',
    "”": '"',
    "≥": ">=",
    "≤": "<=",
    "µ": "u",
}


def render_npd(report: Report, verbose: bool = False) -> str:
    return npd_line(report) + "\n"


def npd_exit_code(report: Report) -> int:
    if report.status == Status.CRITICAL:
        return NPD_PROBLEM
    if report.status == Status.UNKNOWN:
        return NPD_UNKNOWN
    return NPD_OK


def npd_line(report: Report, limit: int = NPD_MAX_BYTES) -> str:
    if report.status in (Status.OK, Status.SKIPPED):
        ran = sum(1 for c in report.checks if c.status != Status.SKIPPED)
        text = f"ok: {ran} of {len(report.checks)} checks ran, no problem found"
    else:
        text = f"{report.status.value}: {root_cause(report)}"
    return fit(text, limit)


def root_cause(report: Report) -> str:
    """The one thing to say about an unhealthy run: its root cause, as short as it can be."""
    fired = [v for v in report.verdicts if v.status in (Status.WARNING, Status.CRITICAL)]
    roots = [v for v in fired if not v.explained_by] or fired
    if roots:
        roots.sort(key=lambda v: (-v.status.rank, _LAYER_ORDER[v.layer]))
        return _verdict_text(roots[0])
    layers = {c.name: c.layer for c in report.checks}
    findings = [
        (check.name, f)
        for check in report.checks
        for f in check.findings
        if f.severity.as_status() in (Status.WARNING, Status.CRITICAL, Status.UNKNOWN)
    ]
    if findings:
        findings.sort(
            key=lambda pair: (-pair[1].severity.as_status().rank, _LAYER_ORDER[layers[pair[0]]])
        )
        return _finding_text(findings[0][1])
    unknown = [c.name for c in report.checks if c.status == Status.UNKNOWN]
    unjudged = [v.rule for v in report.verdicts if v.status == Status.UNKNOWN]
    if unknown:
        return f"could not run: {', '.join(unknown)}"
    if unjudged:
        return f"not judged: {', '.join(unjudged)}"
    return report.headline


def _verdict_text(verdict: Verdict) -> str:
    where = ""
    if verdict.device is not None and verdict.device.index is not None:
        where = f" GPU{verdict.device.index}"
    return f"{verdict.rule}{where}: {verdict.message}"


def _finding_text(finding: Finding) -> str:
    where = ""
    if finding.device is not None:
        if finding.device.index is not None:
            where = f" GPU{finding.device.index}"
        elif finding.device.pci_bus_id:
            where = f" {finding.device.pci_bus_id}"
    return f"{finding.code}{where}: {finding.message}"


def fit(text: str, limit: int = NPD_MAX_BYTES) -> str:
    """One line of printable ASCII, at most `limit` bytes ("..." marks a cut): whitespace (a
    newline, a tab) is one space, any other character that is not printable is shown escaped
    (`sitscheck.printable`), the rest folded to ASCII."""
    plain = printable(" ".join(text.split()))
    plain = "".join(_ASCII.get(ch, ch) for ch in plain)
    plain = unicodedata.normalize("NFKD", plain).encode("ascii", "ignore").decode("ascii")
    plain = " ".join(plain.split())
    if len(plain) <= limit:
        return plain
    return plain[: limit - 3].rstrip() + "..."
