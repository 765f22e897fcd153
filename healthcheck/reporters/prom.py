"""The Prometheus reporter: node_exporter's textfile-collector format (text exposition 0.0.4).

`--output prom=DIR` writes `DIR/sitscheck.prom` atomically (a temporary file that does not
end in `.prom`, renamed), so node_exporter never reads half a file. The file must be readable
by node_exporter's user (`prometheus`, not root): it is written `PROM_FILE_MODE` (0644), and
the folders made for it `PROM_FOLDER_MODE` (0755), whatever the umask. No sample carries a
timestamp (the textfile collector refuses them).

`promtool check metrics` finds nothing to say of the file: base units (`_seconds`, `_hertz`,
`_bytes`, `_watts`, `_celsius`), no `_ratio` on a 0/1 flag, no `_count` on a gauge, no empty
label.

One label scheme: a series about a GPU carries dcgm-exporter's join labels as it spells them,
`gpu` (index), `UUID`, `pci_bus_id` (`00000000:3B:00.0`) and `Hostname` (the node's host
name, `Report.hostname`: a replay's from the bundle's meta.json), so queries join it with
DCGM_FI_* series (`on(Hostname, UUID)`: `instance` differs, node_exporter's target is not
dcgm-exporter's), and the model as `model_name`: dcgm-exporter's `modelName` is the one label
promtool refuses (camelCase), and a model is no join key (a recording rule can copy it:
`label_replace(m, "modelName", "$1", "model_name", "(.*)")`). A lost GPU keeps every label it
had while it answered, from whichever source still knew it (`gpu.resolve`: the GPU outputs,
sysfs, the daemon's last known inventory), so alerts and silences keyed on `UUID` follow it.
A series about another PCI device carries `pci_bus_id` and `Hostname`; a label that does not
apply, or that nothing knew, is left out, never empty.
Label values and help texts are made printable (`sitscheck.printable`): a GPU name or a code
read from a node carries no control or bidi character into the file, a dashboard or a terminal.

Series (all gauges unless said):
- `sitscheck_run_status{status}` 1 for the run's status, 0 for the others (a state set), and
  `sitscheck_run_exit_code`; `sitscheck_run_duration_seconds`;
  `sitscheck_last_run_timestamp_seconds` (Unix time the run started); `sitscheck_info{...}` 1.
- `sitscheck_gpu_health_status{gpu,UUID,pci_bus_id,model_name,Hostname}` per GPU of the
  inventory, like dcgm-exporter's DCGM_EXP_GPU_HEALTH_STATUS: 0 ok, 1 warning, 2 critical,
  3 unknown (the worst finding or verdict naming it, as exit codes);
  `sitscheck_gpu_predicted_failure` 1 where a row remap (or page retirement) is pending: a
  reset is due.
- `sitscheck_check_status{check,status}` state set per check; `sitscheck_check_duration_seconds`;
  `sitscheck_check_findings{check,severity}`.
- `sitscheck_rule_status{rule,status,...GPU labels}` state set per verdict.
- `sitscheck_finding{check,code,severity,...GPU labels}` 1 per finding.
- Daemon runs: `sitscheck_daemon_marks{kind,state}` (new / persisting counts, `cleared`).
- The checks' own metrics, named as the OTLP export names them (`sitscheck.export.semconv`:
  a sampled gauge's mean under its name, its other statistics `..._window_<stat>`; volatile
  ECC counts `hw.errors`, lifetime ones `sitscheck.hw.errors.aggregate`), then mapped the way
  the OTel→Prometheus rules do (dots to underscores, base-unit suffix, braces units dropped),
  prefixed `sitscheck_` when not already, with a `check` label; cumulative counters are
  `counter`s named `..._total`.

`verbose` adds nothing: the file is the same for both.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from pathlib import Path

from msgspec import Struct, field

from ..export.inventory import Gpu, Inventory, gpu_health
from ..export.semconv import COUNTER, otel_point
from ..models import Device, Report, Severity, Status
from ..printable import printable
from .files import write_atomic

PROM_FILE_MODE = 0o644
PROM_FOLDER_MODE = 0o755
PROM_FILE = "sitscheck.prom"
_STATUSES = (Status.OK, Status.WARNING, Status.CRITICAL, Status.UNKNOWN, Status.SKIPPED)
# unit -> (Prometheus base-unit word, factor to the base unit)
_UNITS: dict[str, tuple[str, float]] = {
    "s": ("seconds", 1.0),
    "ms": ("seconds", 1e-3),
    "us": ("seconds", 1e-6),
    "ns": ("seconds", 1e-9),
    "By": ("bytes", 1.0),
    "KiBy": ("bytes", 1024.0),
    "MiBy": ("bytes", 1024.0**2),
    "GiBy": ("bytes", 1024.0**3),
    "KiB": ("bytes", 1024.0),
    "MiB": ("bytes", 1024.0**2),
    "GiB": ("bytes", 1024.0**3),
    "W": ("watts", 1.0),
    "mW": ("watts", 1e-3),
    "J": ("joules", 1.0),
    "mJ": ("joules", 1e-3),
    "Cel": ("celsius", 1.0),
    "Hz": ("hertz", 1.0),
    "kHz": ("hertz", 1e3),
    "MHz": ("hertz", 1e6),
    "GHz": ("hertz", 1e9),
    "V": ("volts", 1.0),
    "A": ("amperes", 1.0),
    "%": ("ratio", 0.01),
    "1": ("ratio", 1.0),
}
# a unit-"1" metric whose last word says it is a 0/1 flag, not a fraction: no `_ratio`
_FLAG_WORDS = ("pending", "failure", "enabled", "present", "supported", "up")
# identity attributes the GPU labels replace
_IDENTITY = {
    "hw.id",
    "hw.type",
    "hw.name",
    "hw.parent",
    "hw.model",
    "hw.vendor",
    "hw.firmware_version",
    "hw.driver_version",
    "sitscheck.gpu.index",
    "sitscheck.gpu.pci_bus_id",
    "sitscheck.device",
}
_PER: dict[str, tuple[str, float]] = {
    "s": ("second", 1.0),
    "min": ("second", 1 / 60),
    "h": ("second", 1 / 3600),
    "d": ("second", 1 / 86400),
}
_BAD_NAME = re.compile(r"[^a-zA-Z0-9_:]")
_BAD_LABEL = re.compile(r"[^a-zA-Z0-9_]")
_UNDERSCORES = re.compile(r"__+")


class _Family(Struct):
    """One metric family of the textfile: name, TYPE, HELP, and one sample per label set."""

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
    gpus = _GpuLabels(Inventory.of(report), report.hostname)
    _run(exp, report)
    _gpu_health(exp, report, gpus)
    _checks(exp, report)
    _rules(exp, report, gpus)
    _findings(exp, report, gpus)
    _daemon(exp, report)
    _check_metrics(exp, report, gpus)
    return exp.render()


def write_prom(report: Report, target: str, verbose: bool = False) -> str:
    """Write the textfile into directory `target` (or to `target` when it ends in .prom)."""
    path = Path(target)
    if path.suffix != ".prom":
        path = path / PROM_FILE
    text = render_prom(report, verbose)
    write_atomic(path, text, mode=PROM_FILE_MODE, folder_mode=PROM_FOLDER_MODE)
    return str(path)


def _run(exp: _Exposition, report: Report) -> None:
    info = exp.family("sitscheck_info", "gauge", "sitscheck version and what the run read")
    info.add(
        _present(
            {
                "version": report.sitscheck_version,
                "host": report.host,
                "mode": report.mode,
                "profile": report.profile,
                "schema_version": report.schema_version,
            }
        ),
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


class _GpuLabels:
    """dcgm-exporter's labels for the GPUs of the inventory, and the node's `Hostname`."""

    def __init__(self, inventory: Inventory, hostname: str | None) -> None:
        self.inventory = inventory
        self.hostname = hostname

    def of_gpu(self, gpu: Gpu) -> dict[str, str]:
        return _present(
            {
                "gpu": None if gpu.index is None else str(gpu.index),
                "UUID": gpu.uuid,
                "pci_bus_id": dcgm_bus_id(gpu.pci_bus_id),
                "model_name": gpu.model,
                "Hostname": self.hostname,
            }
        )

    def of_device(self, device: Device | None) -> dict[str, str]:
        if device is None:
            return {}
        gpu = self.inventory.find(device.index, None, device.pci_bus_id)
        if gpu is None and device.index is not None:
            gpu = Gpu(device.index, None, device.pci_bus_id, device.name, None)
        if gpu is not None:
            return self.of_gpu(gpu)
        return self._other(device.pci_bus_id)

    def of_labels(self, labels: dict[str, str]) -> dict[str, str]:
        gpu, other_bus = self.inventory.locate(labels)
        if gpu is not None:
            return self.of_gpu(gpu)
        return self._other(other_bus)

    def _other(self, bus: str | None) -> dict[str, str]:
        """Another PCI device (a port, a switch, a NIC): its bus id, on this host."""
        if not bus:
            return {}
        return _present({"pci_bus_id": dcgm_bus_id(bus), "Hostname": self.hostname})


def dcgm_bus_id(bus: str | None) -> str | None:
    """A PCI address as NVML and dcgm-exporter print it: 8-digit domain, upper case
    (`0000:3b:00.0` -> `00000000:3B:00.0`)."""
    if not bus:
        return None
    domain, sep, rest = bus.strip().rpartition(":")
    head, sep2, function = rest.partition(".")
    parts = domain.split(":")
    if not sep or len(parts) != 2 or not sep2:
        return bus.strip().upper()
    return f"{parts[0][-8:].zfill(8)}:{parts[1]}:{head}.{function}".upper()


def _present(labels: dict[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if v}


def _gpu_health(exp: _Exposition, report: Report, gpus: _GpuLabels) -> None:
    health = gpu_health(report, gpus.inventory)
    status = exp.family(
        "sitscheck_gpu_health_status",
        "gauge",
        "Health of each GPU, as DCGM_EXP_GPU_HEALTH_STATUS: 0 ok, 1 warning, 2 critical, "
        "3 unknown (the worst finding or verdict naming it)",
    )
    predicted = exp.family(
        "sitscheck_gpu_predicted_failure",
        "gauge",
        "1 where a GPU will fail before it does (a row remap or page retirement is pending: "
        "reset it)",
    )
    for gpu in gpus.inventory.gpus:
        labels = gpus.of_gpu(gpu)
        state = health[gpu.hw_id]
        status.add(labels, state.status.exit_code)
        predicted.add(labels, 1 if state.state == "predicted_failure" else 0)


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


def _rules(exp: _Exposition, report: Report, gpus: _GpuLabels) -> None:
    status = exp.family(
        "sitscheck_rule_status", "gauge", "Status of each rule verdict: 1 for the status it had"
    )
    for verdict in report.verdicts:
        where = gpus.of_device(verdict.device)
        for each in _STATUSES:
            status.add(
                {"rule": verdict.rule, **where, "status": each.value},
                1 if verdict.status == each else 0,
            )


def _findings(exp: _Exposition, report: Report, gpus: _GpuLabels) -> None:
    family = exp.family("sitscheck_finding", "gauge", "One series per finding of the last run")
    for check in report.checks:
        for finding in check.findings:
            family.add(
                {
                    "check": check.name,
                    "code": finding.code,
                    "severity": finding.severity.value,
                    **gpus.of_device(finding.device),
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


def _check_metrics(exp: _Exposition, report: Report, gpus: _GpuLabels) -> None:
    reserved = set(exp.families)
    for check in report.checks:
        for metric in check.metrics:
            point = otel_point(metric)
            counter = point.spec.kind == COUNTER or metric.kind == "counter"  # as declared
            name, factor = prom_metric(point.name, point.spec.unit, counter)
            if name in reserved:
                name, factor = prom_metric("sitscheck_metric_" + name, point.spec.unit, counter)
            help_text = f"{point.name} ({point.spec.unit})" if point.spec.unit else point.name
            family = exp.family(name, "counter" if counter else "gauge", help_text)
            own = {
                key.removeprefix("sitscheck."): value
                for key, value in point.attrs.items()
                if key not in _IDENTITY and isinstance(value, str) and value
            }
            labels = {"check": check.name, **gpus.of_labels(metric.labels), **_label_names(own)}
            family.add(labels, point.value * factor)


def prom_name(name: str, unit: str, counter: bool = False) -> str:
    """An OpenTelemetry metric name and unit as a Prometheus metric name."""
    return prom_metric(name, unit, counter)[0]


def prom_metric(name: str, unit: str, counter: bool = False) -> tuple[str, float]:
    """The Prometheus name, and the factor that takes a value to its base unit."""
    base = _UNDERSCORES.sub("_", _BAD_NAME.sub("_", name)).strip("_")
    if not base.startswith("sitscheck_"):
        base = f"sitscheck_{base}"
    suffix, factor = _unit_suffix(unit)
    if suffix == "ratio" and base.rsplit("_", 1)[-1] in _FLAG_WORDS:
        suffix = ""  # a 0/1 flag is no fraction
    if not counter and base.endswith("_count"):
        base = base[: -len("_count")] + "_number"  # `_count` belongs to histograms/summaries
    if suffix and not base.endswith(f"_{suffix}"):
        base = f"{base}_{suffix}"
    if counter and not base.endswith("_total"):
        base = f"{base}_total"
    return (base if not base[0].isdigit() else f"_{base}"), factor


def _unit_suffix(unit: str) -> tuple[str, float]:
    if not unit:
        return "", 1.0
    main, _, per = unit.partition("/")
    main = re.sub(r"\{[^}]*\}", "", main)
    words: list[str] = []
    factor = 1.0
    if main:
        word, scale = _UNITS.get(main, (_BAD_LABEL.sub("_", main).strip("_"), 1.0))
        words.append(word)
        factor *= scale
    if per:
        per = re.sub(r"\{[^}]*\}", "", per)
        if per:
            word, scale = _PER.get(per, (_BAD_LABEL.sub("_", per).strip("_"), 1.0))
            words.append("per_" + word)
            factor *= scale
    return "_".join(w for w in words if w), factor


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


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    body = ",".join(f'{key}="{_escape_value(value)}"' for key, value in labels.items())
    return "{" + body + "}"


def _escape_value(value: str) -> str:
    """A label value as the exposition format writes it (a newline is already shown `\\n`)."""
    return printable(value).replace("\\", "\\\\").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return printable(text).replace("\\", "\\\\")


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
