"""The Prometheus reporter: node_exporter's textfile-collector format (text exposition 0.0.4).

`--output prom=DIR` writes `DIR/sitscheck.prom` atomically (a temporary file that does not
end in `.prom`, renamed), so node_exporter never reads half a file. The file must be readable
by node_exporter's user: write it with `PROM_FILE_MODE` (0644). No sample carries a
timestamp (the textfile collector refuses them).

Series (all gauges unless said):
- `sitscheck_run_status{status}` 1 for the run's status, 0 for the others (a state set), and
  `sitscheck_run_exit_code`; `sitscheck_run_duration_seconds`;
  `sitscheck_last_run_timestamp_seconds` (Unix time the run started); `sitscheck_info{...}` 1.
- `sitscheck_check_status{check,status}` state set per check; `sitscheck_check_duration_seconds`;
  `sitscheck_check_findings{check,severity}`.
- `sitscheck_rule_status{rule,gpu,pci_bus_id,status}` state set per verdict (node-scope
  verdicts have empty `gpu`/`pci_bus_id`).
- `sitscheck_finding{check,code,severity,gpu,pci_bus_id}` 1 per finding.
- Daemon runs: `sitscheck_daemon_marks{kind,state}` (new / persisting counts, `cleared`).
- The checks' own metrics, OpenTelemetry names mapped the way the OTel→Prometheus rules do
  (dots to underscores, unit suffix, braces units dropped), prefixed `sitscheck_` when not
  already, with a `check` label; cumulative counters (`{error}` units: AER, replay, ECC, NVLink
  errors) are `counter`s named `..._total`.

`verbose` adds nothing: the file is the same for both.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..models import Device, Report, Severity, Status
from .outputs import write_atomic

PROM_FILE_MODE = 0o644
PROM_FILE = "sitscheck.prom"
_STATUSES = (Status.OK, Status.WARNING, Status.CRITICAL, Status.UNKNOWN, Status.SKIPPED)
_UNITS = {
    "s": "seconds",
    "ms": "milliseconds",
    "us": "microseconds",
    "By": "bytes",
    "KiBy": "kibibytes",
    "MiBy": "mebibytes",
    "GiBy": "gibibytes",
    "By/s": "bytes_per_second",
    "W": "watts",
    "J": "joules",
    "Cel": "celsius",
    "Hz": "hertz",
    "MHz": "megahertz",
    "V": "volts",
    "A": "amperes",
    "%": "percent",
    "1": "ratio",
}
_PER = {"s": "second", "min": "minute", "h": "hour", "d": "day"}
_BAD_NAME = re.compile(r"[^a-zA-Z0-9_:]")
_BAD_LABEL = re.compile(r"[^a-zA-Z0-9_]")
_UNDERSCORES = re.compile(r"__+")


@dataclass
class _Family:
    name: str
    kind: str
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)
    seen: set[tuple[tuple[str, str], ...]] = field(default_factory=set)

    def add(self, labels: dict[str, str], value: float) -> None:
        key = tuple(sorted(labels.items()))
        if key in self.seen:  # a duplicate series is an error to node_exporter: keep the first
            return
        self.seen.add(key)
        self.samples.append((labels, value))


class _Exposition:
    def __init__(self) -> None:
        self.families: dict[str, _Family] = {}

    def family(self, name: str, kind: str, help_text: str) -> _Family:
        found = self.families.get(name)
        if found is None:
            found = self.families[name] = _Family(name, kind, help_text)
        return found

    def render(self) -> str:
        out: list[str] = []
        for family in self.families.values():
            if not family.samples:
                continue
            out.append(f"# HELP {family.name} {_escape_help(family.help)}")
            out.append(f"# TYPE {family.name} {family.kind}")
            for labels, value in family.samples:
                out.append(f"{family.name}{_labels(labels)} {_value(value)}")
        return "\n".join(out) + "\n"


def render_prom(report: Report, verbose: bool = False) -> str:
    exp = _Exposition()
    _run(exp, report)
    _checks(exp, report)
    _rules(exp, report)
    _findings(exp, report)
    _daemon(exp, report)
    _check_metrics(exp, report)
    return exp.render()


def write_prom(report: Report, target: str, verbose: bool = False) -> str:
    """Write the textfile into directory `target` (or to `target` when it ends in .prom)."""
    path = Path(target)
    if path.suffix != ".prom":
        path = path / PROM_FILE
    write_atomic(path, render_prom(report, verbose), mode=PROM_FILE_MODE)
    return str(path)


def _run(exp: _Exposition, report: Report) -> None:
    info = exp.family("sitscheck_info", "gauge", "sitscheck version and what the run read")
    info.add(
        {
            "version": report.sitscheck_version,
            "host": report.host,
            "mode": report.mode,
            "profile": report.profile or "",
            "schema_version": report.schema_version,
        },
        1,
    )
    status = exp.family(
        "sitscheck_run_status", "gauge", "Status of the last run: 1 for the status it had"
    )
    for each in _STATUSES:
        status.add({"status": each.value}, 1 if report.status == each else 0)
    exp.family(
        "sitscheck_run_exit_code",
        "gauge",
        "Exit code of the last run (0 ok, 1 warn, 2 crit, 3 unknown)",
    ).add({}, report.exit_code)
    exp.family("sitscheck_run_duration_seconds", "gauge", "How long the last run took").add(
        {}, report.duration_s
    )
    started = _timestamp(report.started_at)
    if started is not None:
        exp.family(
            "sitscheck_last_run_timestamp_seconds", "gauge", "When the last run started (Unix time)"
        ).add({}, started)


def _checks(exp: _Exposition, report: Report) -> None:
    status = exp.family(
        "sitscheck_check_status", "gauge", "Status of each check: 1 for the status it had"
    )
    duration = exp.family("sitscheck_check_duration_seconds", "gauge", "How long each check took")
    findings = exp.family(
        "sitscheck_check_findings", "gauge", "Findings of each check, by severity"
    )
    for check in report.checks:
        for each in _STATUSES:
            status.add(
                {"check": check.name, "status": each.value}, 1 if check.status == each else 0
            )
        duration.add({"check": check.name}, check.duration_s)
        for severity in Severity:
            count = sum(1 for f in check.findings if f.severity == severity)
            findings.add({"check": check.name, "severity": severity.value}, count)


def _rules(exp: _Exposition, report: Report) -> None:
    status = exp.family(
        "sitscheck_rule_status", "gauge", "Status of each rule verdict: 1 for the status it had"
    )
    for verdict in report.verdicts:
        where = _device_labels(verdict.device)
        for each in _STATUSES:
            status.add(
                {"rule": verdict.rule, **where, "status": each.value},
                1 if verdict.status == each else 0,
            )


def _findings(exp: _Exposition, report: Report) -> None:
    family = exp.family("sitscheck_finding", "gauge", "One series per finding of the last run")
    for check in report.checks:
        for finding in check.findings:
            family.add(
                {
                    "check": check.name,
                    "code": finding.code,
                    "severity": finding.severity.value,
                    **_device_labels(finding.device),
                },
                1,
            )


def _daemon(exp: _Exposition, report: Report) -> None:
    if report.daemon is None:
        return
    family = exp.family(
        "sitscheck_daemon_marks",
        "gauge",
        "Daemon runs: findings and verdicts new or persisting since the last run, and cleared",
    )
    for kind in ("finding", "verdict"):
        marks = (
            [f.state for c in report.checks for f in c.findings]
            if kind == "finding"
            else [v.state for v in report.verdicts]
        )
        for state in ("new", "persisting"):
            family.add({"kind": kind, "state": state}, sum(1 for m in marks if m == state))
        family.add(
            {"kind": kind, "state": "cleared"}, sum(1 for c in report.cleared if c.kind == kind)
        )


def _check_metrics(exp: _Exposition, report: Report) -> None:
    reserved = set(exp.families)
    for check in report.checks:
        for metric in check.metrics:
            counter = metric.kind == "counter"  # as its check declares it
            name = prom_name(metric.name, metric.unit, counter)
            if name in reserved:
                name = prom_name("sitscheck_metric_" + name, "", counter)
            help_text = f"{metric.name} ({metric.unit})" if metric.unit else metric.name
            family = exp.family(name, "counter" if counter else "gauge", help_text)
            family.add({"check": check.name, **_label_names(metric.labels)}, metric.value)


def prom_name(name: str, unit: str, counter: bool = False) -> str:
    """An OpenTelemetry metric name and unit as a Prometheus metric name."""
    base = _UNDERSCORES.sub("_", _BAD_NAME.sub("_", name)).strip("_")
    if not base.startswith("sitscheck_"):
        base = f"sitscheck_{base}"
    suffix = _unit_suffix(unit)
    if suffix and not base.endswith(f"_{suffix}"):
        base = f"{base}_{suffix}"
    if counter and not base.endswith("_total"):
        base = f"{base}_total"
    return base if not base[0].isdigit() else f"_{base}"


def _unit_suffix(unit: str) -> str:
    if not unit:
        return ""
    main, _, per = unit.partition("/")
    main = re.sub(r"\{[^}]*\}", "", main)
    words = [_UNITS.get(main, _BAD_LABEL.sub("_", main).strip("_"))] if main else []
    if per:
        per = re.sub(r"\{[^}]*\}", "", per)
        if per:
            words.append("per_" + _PER.get(per, _BAD_LABEL.sub("_", per).strip("_")))
    return "_".join(w for w in words if w)


def _label_names(labels: dict[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in labels.items():
        name = _BAD_LABEL.sub("_", key)
        if not name or name[0].isdigit():
            name = f"_{name}"
        if name.startswith("__"):
            name = "x" + name
        if name == "check":
            name = "metric_check"
        out.setdefault(name, value)
    return out


def _device_labels(device: Device | None) -> dict[str, str]:
    if device is None:
        return {"gpu": "", "pci_bus_id": ""}
    return {
        "gpu": "" if device.index is None else str(device.index),
        "pci_bus_id": device.pci_bus_id or "",
    }


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    body = ",".join(f'{key}="{_escape_value(value)}"' for key, value in labels.items())
    return "{" + body + "}"


def _escape_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def _timestamp(text: str) -> float | None:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.timestamp() if moment.tzinfo else None
