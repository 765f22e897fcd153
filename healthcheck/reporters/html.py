"""The HTML report (`-o html=FILE`): one self-contained page an operator opens in a browser.

The verdicts as the table reporter orders them (the headline, the diagnosis root cause first,
then each check with its findings and notes, then the rules that could not judge), and each
device's series (the soak's trace per GPU) as one inline SVG chart: clocks, power, temperature
and iteration time on a shared time axis.

Self-contained: no script, no external stylesheet, font or image; the page's own
Content-Security-Policy (`default-src 'none'`) forbids the browser any fetch. Every text from
the report is made printable and HTML-escaped: hostnames, messages and excerpts come from the
node, which is untrusted.
"""

from __future__ import annotations

from ..models import CheckResult, Device, Finding, Report, Series, Status
from .html_text import html_text as _text
from .svg_chart import CHART_CSS, series_svg
from .table import context, device_label, diagnosis

CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
_COLOUR = {
    Status.OK: "#1a7f37",
    Status.WARNING: "#9a6700",
    Status.CRITICAL: "#cf222e",
    Status.UNKNOWN: "#8250df",
    Status.SKIPPED: "#6e7781",
}
_CSS = """
:root { color-scheme: light; }
body { margin: 0; background: #ffffff; color: #1f2328;
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
main { max-width: 1040px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 20px; margin: 0 0 4px; }
h2 { font-size: 16px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 14px; margin: 0 0 6px; }
.context, .muted { color: #57606a; }
.context { margin: 0 0 8px; }
.status { display: inline-block; min-width: 64px; padding: 1px 8px; border-radius: 10px;
          color: #fff; font-size: 12px; font-weight: 600; text-align: center;
          text-transform: uppercase; }
.banner { border-left: 6px solid; padding: 10px 14px; background: #f6f8fa; margin: 8px 0 4px; }
.banner h1 { font-size: 18px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: 6px 8px;
         border-bottom: 1px solid #eaeef2; }
th { font-size: 12px; color: #57606a; font-weight: 600; }
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { font-weight: 600; white-space: nowrap; }
ul { margin: 0; padding-left: 18px; }
li { margin: 2px 0; }
code { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; }
pre { font: 12px ui-monospace, "DejaVu Sans Mono", monospace; background: #f6f8fa;
      padding: 6px 8px; margin: 4px 0; white-space: pre-wrap; overflow-wrap: anywhere; }
.action { color: #57606a; }
.cause { margin: 0 0 10px; }
.device { border: 1px solid #d0d7de; border-radius: 6px; padding: 12px 14px 6px; margin: 0 0 16px; }
.device h3 code { font-size: 12px; color: #57606a; }
"""


def render_html(report: Report, verbose: bool = False) -> str:
    title = f"sitscheck {report.status.value.upper()}: {report.host}"
    body = [
        _banner(report),
        _diagnosis(report),
        _checks(report, verbose),
        *(_series_section(check) for check in report.checks if check.series),
        _not_judged(report),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="color-scheme" content="light">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_text(title)}</title><style>{_CSS}{CHART_CSS}</style></head>\n"
        f"<body><main>\n{''.join(part for part in body if part)}</main></body></html>\n"
    )


def _status(status: Status) -> str:
    return f'<span class="status" style="background:{_COLOUR[status]}">{status.value}</span>'


def _banner(report: Report) -> str:
    return (
        f'<header class="banner" style="border-color:{_COLOUR[report.status]}">'
        f"<h1>{_text(report.headline)}</h1>"
        f'<p class="context">{_text(context(report))}</p></header>\n'
    )


def _diagnosis(report: Report) -> str:
    causes = diagnosis(report)
    if not causes:
        return ""
    out = ["<h2>Diagnosis, root cause first</h2>"]
    for root, symptoms, findings in causes:
        out.append(
            f'<div class="cause">{_status(root.status)} <strong>{_text(root.layer.value)}</strong>'
            f": {_text(root.message)}{_on(root.device)}"
        )
        if root.action:
            out.append(f'<div class="action">action: {_text(root.action)}</div>')
        explained = [f"{_status(s.status)} {_text(s.message)}{_on(s.device)}" for s in symptoms]
        explained += [
            f"{_status(f.severity.as_status())} <code>{_text(f.code)}</code>: {_text(f.message)}"
            for f in findings
        ]
        if explained:
            out.append("<ul>" + "".join(f"<li>explains {e}</li>" for e in explained) + "</ul>")
        out.append("</div>")
    return "\n".join(out) + "\n"


def _checks(report: Report, verbose: bool) -> str:
    rows = [
        "<h2>Checks</h2><table><thead><tr><th>check</th><th>status</th>"
        '<th class="num">time</th><th>details</th></tr></thead><tbody>'
    ]
    for check in report.checks:
        rows.append(
            f'<tr><td class="name">{_text(check.name)}</td><td>{_status(check.status)}</td>'
            f'<td class="num">{check.duration_s:.2f} s</td><td>{_details(check, verbose)}</td></tr>'
        )
    rows.append("</tbody></table>\n")
    return "".join(rows)


def _details(check: CheckResult, verbose: bool) -> str:
    items = []
    if check.skip_reason:
        items.append(f"skipped: {_text(check.skip_reason)}")
    if check.error:
        items.append(f"error: {_text(check.error)}")
    if check.status in (Status.WARNING, Status.CRITICAL) and not check.error:
        if not any(f.severity.as_status() == check.status for f in check.findings):
            items.append(f"{check.status.value}: from the rule verdicts on its facts (diagnosis)")
    items.extend(_finding(finding, verbose) for finding in check.findings)
    items.extend(f"not judged: {_text(note)}" for note in check.not_judged)
    if verbose and check.metrics:
        items.append(f"metrics: {len(check.metrics)}")
    if not items:
        return ""
    return "<ul>" + "".join(f"<li>{item}</li>" for item in items) + "</ul>"


def _finding(finding: Finding, verbose: bool) -> str:
    out = [
        f"{_status(finding.severity.as_status())} <code>{_text(finding.code)}</code>"
        f"{_on(finding.device)}: {_text(finding.message)}"
    ]
    if finding.action:
        out.append(f'<div class="action">action: {_text(finding.action)}</div>')
    if verbose:
        for evidence in finding.evidence:
            ref = f" {evidence.ref}" if evidence.ref else ""
            out.append(f'<div class="muted">evidence: {_text(evidence.source + ref)}</div>')
            if evidence.excerpt:
                rows = evidence.excerpt.splitlines()[:10]
                out.append(f"<pre>{_text(chr(10).join(rows))}</pre>")
    return "".join(out)


def _not_judged(report: Report) -> str:
    unknown = [v for v in report.verdicts if v.status == Status.UNKNOWN]
    if not unknown:
        return ""
    items = "".join(
        f"<li><code>{_text(v.rule)}</code>{_on(v.device)}: {_text(v.reason or '')}</li>"
        for v in unknown
    )
    return f"<h2>Rules not judged</h2><ul>{items}</ul>\n"


def _series_section(check: CheckResult) -> str:
    blocks = [f"<h2>{_text(check.name)}: trace per GPU</h2>"]
    first = next((s.moments[0] for s in check.series if s.moments), None)
    if first is not None:
        blocks.append(
            f'<p class="muted">Shaded: before the {_text(first.label)} (the facts\' statistics '
            "are over the rest). Dashed: limits and reference levels.</p>"
        )
    blocks.extend(_device_block(series) for series in check.series)
    return "\n".join(blocks) + "\n"


def _device_block(series: Series) -> str:
    title = device_title(series.device)
    chart = series_svg(series, title)
    body = chart or '<p class="muted">no samples were recorded</p>'
    bus = f" <code>{_text(series.device.pci_bus_id)}</code>" if series.device.pci_bus_id else ""
    uuid = f" <code>{_text(series.device.uuid)}</code>" if series.device.uuid else ""
    name = f" · {_text(series.device.name)}" if series.device.name else ""
    index = series.device.index if series.device.index is not None else "?"
    return (
        f'<section class="device" data-gpu="{_text(index)}"><h3>GPU {_text(index)}{name}'
        f"{uuid}{bus}</h3>{body}</section>"
    )


def device_title(device: Device) -> str:
    """Plain text naming the device: index, model, UUID, PCI bus id (each where known)."""
    parts = [
        f"GPU {device.index}" if device.index is not None else "GPU",
        device.name,
        device.uuid,
        device.pci_bus_id,
    ]
    return " · ".join(p for p in parts if p)


def _on(device: Device | None) -> str:
    label = device_label(device)
    return f' <span class="muted">({_text(label)})</span>' if label else ""
