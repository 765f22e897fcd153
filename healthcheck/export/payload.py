"""A report as OTLP requests: one trace and one batch of metrics per run, serialised once.

The bytes built here are what is sent and what is spooled, so a payload sent late is the
payload the run made (same trace and span ids, same timestamps).

Trace: root span `sitscheck.run` (from `started_at`, for `duration_s`) with the run's status,
profile, host and counts as attributes and one `sitscheck.verdict` event per rule verdict;
a child span `check <name>` per check (its status, layer, duration, error), each finding a
`sitscheck.finding` event on it. The OTel span status is ERROR only for a check that could
not run (it has an `error`: crashed, timed out, failed to load), and on the root when any
check could not run; a critical finding is `sitscheck.status=critical`, not an ERROR span.

Metrics: every metric of every check, one data point per run (per GPU for a per-GPU metric,
as the check labels it), its labels as attributes. A name of the OpenTelemetry hardware
conventions (`HW_METRICS`: `hw.gpu.utilization`, `hw.power`, `hw.errors`, ...) goes out as
that convention's instrument (gauge, counter or up-down counter) in its unit, converting a
check's unit where that is exact (`%` to a fraction, MiB to bytes, mW to W); an `hw.*` metric
whose unit cannot be converted (a rate in By/s for the byte counter `hw.gpu.io`) is renamed
`sitscheck.hw.*`, and every other name is a `sitscheck.*` gauge in its own unit.
A GPU named by a metric's labels (`hw.id`, `gpu.index`; or `uuid`, `pci_bus_id`, `device`)
gets the hardware attributes from the driver check's inventory: `hw.id` (UUID, else bus id,
else `gpu<index>`), `hw.type=gpu`, `hw.name` (`GPU 0`), `hw.model`, `hw.vendor`,
`hw.firmware_version` (VBIOS), `hw.driver_version`, `gpu.index`, `gpu.pci_bus_id`; a check's
own label wins over these. Added per run: `hw.status` per GPU (ok/degraded/failed from the
worst finding or verdict naming it, no state 1 when that is unknown),
`sitscheck.run.duration`, `sitscheck.run.exit_code`, `sitscheck.check.status`,
`sitscheck.check.duration`, `sitscheck.findings` and `sitscheck.otlp.dropped`.
"""

from __future__ import annotations

import platform
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
)
from opentelemetry.proto.metrics.v1 import metrics_pb2
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1 import trace_pb2

from .. import __version__
from ..models import (
    CheckResult,
    Device,
    Finding,
    Metric,
    Report,
    Severity,
    Status,
    Verdict,
    worst,
)

AttrValue = str | bool | int | float | list[str]
Attrs = dict[str, AttrValue]

SCOPE = "sitscheck"
GAUGE, COUNTER, UPDOWN = "gauge", "counter", "updowncounter"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_EXCERPT_CHARS = 1000


@dataclass(frozen=True)
class Spec:
    kind: str
    unit: str
    description: str


# The OpenTelemetry hardware conventions' metrics (semconv `hw.*`, development status).
HW_METRICS: dict[str, Spec] = {
    "hw.gpu.utilization": Spec(GAUGE, "1", "Fraction of time spent in a specific task."),
    "hw.gpu.memory.utilization": Spec(GAUGE, "1", "Fraction of GPU memory used."),
    "hw.gpu.memory.usage": Spec(UPDOWN, "By", "GPU memory used."),
    "hw.gpu.memory.limit": Spec(UPDOWN, "By", "Size of the GPU memory."),
    "hw.gpu.io": Spec(COUNTER, "By", "Received and transmitted bytes by the GPU."),
    "hw.errors": Spec(COUNTER, "{error}", "Number of errors encountered by the component."),
    "hw.power": Spec(GAUGE, "W", "Instantaneous power consumed by the component."),
    "hw.energy": Spec(COUNTER, "J", "Energy consumed by the component."),
    "hw.temperature": Spec(GAUGE, "Cel", "Temperature in degrees Celsius."),
    "hw.temperature.limit": Spec(GAUGE, "Cel", "Temperature limit in degrees Celsius."),
    "hw.status": Spec(
        UPDOWN, "1", "Operational status: 1 (true) or 0 (false) for each of the possible states."
    ),
}

# unit as a check writes it -> (OTel unit, factor)
_UNITS: dict[str, tuple[str, float]] = {
    "%": ("1", 0.01),
    "percent": ("1", 0.01),
    "1": ("1", 1.0),
    "ratio": ("1", 1.0),
    "B": ("By", 1.0),
    "By": ("By", 1.0),
    "KiB": ("By", 1024.0),
    "MiB": ("By", 1024.0**2),
    "GiB": ("By", 1024.0**3),
    "W": ("W", 1.0),
    "mW": ("W", 0.001),
    "J": ("J", 1.0),
    "mJ": ("J", 0.001),
    "Cel": ("Cel", 1.0),
    "C": ("Cel", 1.0),
    "°C": ("Cel", 1.0),
    "degC": ("Cel", 1.0),
}

_GPU_ID_LABELS = ("hw.id", "uuid", "gpu_uuid")
_GPU_BUS_LABELS = ("pci_bus_id", "gpu.pci_bus_id", "bus_id", "device")
_GPU_INDEX_LABELS = ("gpu.index", "gpu_index", "gpu", "index")
_HW_STATES = ("ok", "degraded", "failed")


@dataclass(frozen=True)
class HostInfo:
    """What the resource says of the machine: only for a live run (a replay is another host)."""

    host_id: str | None = None
    host_arch: str | None = None
    os_type: str | None = None
    os_name: str | None = None
    os_version: str | None = None
    os_description: str | None = None


@dataclass(frozen=True)
class Extras:
    """What the metrics add beyond the report: the spool's drop counts."""

    dropped_payloads: int = 0
    rejected_payloads: int = 0
    dropped_since_ns: int = 0
    counter_start_ns: int = 0  # start of cumulative hardware counters (boot), 0 = unknown


@dataclass(frozen=True)
class Payloads:
    traces: bytes
    metrics: bytes
    trace_id: bytes
    run_time_ns: int  # `started_at`: the spool names files by it


# ---------------------------------------------------------------- resource


def detect_host(report: Report, root: Path = Path("/")) -> HostInfo:
    """host.id (machine-id), host.arch and os.* of this machine, for a live run only."""
    if report.mode != "live":
        return HostInfo()
    host_id = None
    for candidate in ("etc/machine-id", "var/lib/dbus/machine-id"):
        try:
            host_id = (root / candidate).read_text(encoding="utf-8").strip() or None
        except OSError:
            continue
        if host_id:
            break
    release: dict[str, str] = {}
    try:
        for line in (root / "etc/os-release").read_text(encoding="utf-8").splitlines():
            key, sep, value = line.partition("=")
            if sep:
                release[key.strip()] = value.strip().strip('"')
    except OSError:
        pass
    machine = platform.machine().lower()
    arch = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
    return HostInfo(
        host_id=host_id,
        host_arch=arch.get(machine, machine or None),
        os_type=platform.system().lower() or None,
        os_name=release.get("NAME"),
        os_version=platform.release() or None,
        os_description=release.get("PRETTY_NAME"),
    )


def resource_attributes(
    report: Report, host: HostInfo, service_name: str | None, extra: Mapping[str, str]
) -> Attrs:
    """Detected attributes < OTEL_RESOURCE_ATTRIBUTES / the file's < OTEL_SERVICE_NAME."""
    attrs: Attrs = {
        "service.name": "sitscheck",
        "service.version": report.sitscheck_version,
        "host.name": report.host,
    }
    detected = {
        "host.id": host.host_id,
        "host.arch": host.host_arch,
        "os.type": host.os_type,
        "os.name": host.os_name,
        "os.version": host.os_version,
        "os.description": host.os_description,
    }
    attrs.update({k: v for k, v in detected.items() if v is not None})
    attrs.update(extra)
    if service_name:
        attrs["service.name"] = service_name
    return attrs


# ---------------------------------------------------------------- the GPUs a report knows


@dataclass(frozen=True)
class Gpu:
    index: int | None
    uuid: str | None
    pci_bus_id: str | None
    model: str | None
    vbios: str | None
    state: str | None = None  # the driver's word for it: ok, or why not

    @property
    def hw_id(self) -> str:
        return self.uuid or self.pci_bus_id or f"gpu{self.index}"


@dataclass
class Inventory:
    gpus: list[Gpu] = field(default_factory=list)
    driver_version: str | None = None

    @classmethod
    def of(cls, report: Report) -> Inventory:
        driver = report.check("driver")
        facts = driver.facts if driver is not None else {}
        gpus = []
        for raw in facts.get("gpus") or []:
            if not isinstance(raw, dict):
                continue
            index = raw.get("index")
            gpus.append(
                Gpu(
                    index=index if isinstance(index, int) else None,
                    uuid=_str(raw.get("uuid")),
                    pci_bus_id=_bus_id(raw.get("pci_bus_id")),
                    model=_str(raw.get("name")),
                    vbios=_str(raw.get("vbios")),
                    state=_str(raw.get("state")),
                )
            )
        return cls(gpus, _str(facts.get("driver_version")))

    def find(
        self, index: int | None = None, uuid: str | None = None, bus: str | None = None
    ) -> Gpu | None:
        bus = _bus_id(bus)
        for wanted, key in ((uuid, "hw_id"), (uuid, "uuid"), (bus, "pci_bus_id"), (index, "index")):
            if wanted is None:
                continue
            found = next((g for g in self.gpus if getattr(g, key) == wanted), None)
            if found is not None:
                return found
        return None

    def gpu_attrs(self, gpu: Gpu) -> Attrs:
        attrs: Attrs = {"hw.id": gpu.hw_id, "hw.type": "gpu"}
        if gpu.index is not None:
            attrs["hw.name"] = f"GPU {gpu.index}"
            attrs["gpu.index"] = str(gpu.index)
        if gpu.model:
            attrs["hw.model"] = gpu.model
            attrs["hw.vendor"] = "NVIDIA"
        if gpu.vbios:
            attrs["hw.firmware_version"] = gpu.vbios
        if self.driver_version:
            attrs["hw.driver_version"] = self.driver_version
        if gpu.pci_bus_id:
            attrs["gpu.pci_bus_id"] = gpu.pci_bus_id
        return attrs

    def device_attrs(self, device: Device | None) -> Attrs:
        """A finding's or verdict's device: a GPU as `hw.*`, another device by bus id."""
        if device is None:
            return {}
        gpu = self.find(device.index, None, device.pci_bus_id)
        if gpu is None and device.index is not None:
            gpu = Gpu(device.index, None, _bus_id(device.pci_bus_id), device.name, None)
        if gpu is not None:
            return self.gpu_attrs(gpu)
        attrs: Attrs = {}
        if device.pci_bus_id:
            attrs["sitscheck.device.pci_bus_id"] = device.pci_bus_id
        if device.name:
            attrs["sitscheck.device.name"] = device.name
        return attrs


def _str(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _bus_id(value: Any) -> str | None:
    """`00000000:3B:00.0` and `0000:3b:00.0` alike: a 4-digit domain, lower case."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().lower()
    domain, sep, rest = text.partition(":")
    if sep and rest.count(":") == 1 and len(domain) > 4 and set(domain[:-4]) == {"0"}:
        return f"{domain[-4:]}:{rest}"
    return text


# ---------------------------------------------------------------- values and times


def _any(value: AttrValue) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, list):
        return AnyValue(array_value=ArrayValue(values=[AnyValue(string_value=v) for v in value]))
    return AnyValue(string_value=str(value))


def _kvs(attrs: Mapping[str, AttrValue | None]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_any(v)) for k, v in attrs.items() if v is not None]


def started_ns(report: Report) -> int:
    text = report.started_at.strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return ((moment - _EPOCH) // timedelta(microseconds=1)) * 1000


def _seconds_ns(seconds: float) -> int:
    return max(round(seconds * 1e9), 0)


# ---------------------------------------------------------------- traces


def build_traces(
    report: Report, resource: Attrs, trace_id: bytes | None = None
) -> ExportTraceServiceRequest:
    inventory = Inventory.of(report)
    trace_id = trace_id or secrets.token_bytes(16)
    start = started_ns(report)
    end = start + _seconds_ns(report.duration_s)
    root_id = secrets.token_bytes(8)
    errored = [c.name for c in report.checks if c.error is not None]
    root = trace_pb2.Span(
        trace_id=trace_id,
        span_id=root_id,
        name="sitscheck.run",
        kind=trace_pb2.Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=start,
        end_time_unix_nano=end,
        attributes=_kvs(_run_attrs(report)),
        events=[_verdict_event(v, end, inventory) for v in report.verdicts],
        status=_status(
            f"{len(errored)} check(s) could not run: {', '.join(errored)}" if errored else None
        ),
    )
    spans = [root]
    for check in report.checks:
        check_end = min(start + _seconds_ns(check.duration_s), end) if end > start else start
        spans.append(
            trace_pb2.Span(
                trace_id=trace_id,
                span_id=secrets.token_bytes(8),
                parent_span_id=root_id,
                name=f"check {check.name}",
                kind=trace_pb2.Span.SPAN_KIND_INTERNAL,
                start_time_unix_nano=start,
                end_time_unix_nano=check_end,
                attributes=_kvs(_check_attrs(check)),
                events=[
                    _finding_event(f, check.name, check_end, inventory) for f in check.findings
                ],
                status=_status(check.error),
            )
        )
    scope = InstrumentationScope(name=SCOPE, version=__version__)
    return ExportTraceServiceRequest(
        resource_spans=[
            trace_pb2.ResourceSpans(
                resource=Resource(attributes=_kvs(resource)),
                scope_spans=[trace_pb2.ScopeSpans(scope=scope, spans=spans)],
            )
        ]
    )


def _status(error: str | None) -> trace_pb2.Status:
    if error is None:
        return trace_pb2.Status(code=trace_pb2.Status.STATUS_CODE_UNSET)
    return trace_pb2.Status(code=trace_pb2.Status.STATUS_CODE_ERROR, message=error)


def _run_attrs(report: Report) -> dict[str, AttrValue | None]:
    attrs: dict[str, AttrValue | None] = {
        "host.name": report.host,
        "sitscheck.status": report.status.value,
        "sitscheck.exit_code": report.exit_code,
        "sitscheck.headline": report.headline,
        "sitscheck.profile": report.profile,
        "sitscheck.mode": report.mode,
        "sitscheck.bundle": report.bundle,
        "sitscheck.schema_version": report.schema_version,
        "sitscheck.duration_s": float(report.duration_s),
        "sitscheck.checks.total": len(report.checks),
        "sitscheck.checks.errored": sum(1 for c in report.checks if c.error is not None),
    }
    for status in Status:
        attrs[f"sitscheck.checks.{status.value}"] = sum(
            1 for c in report.checks if c.status is status
        )
    findings = [f for c in report.checks for f in c.findings]
    attrs["sitscheck.findings.total"] = len(findings)
    for severity in Severity:
        attrs[f"sitscheck.findings.{severity.value}"] = sum(
            1 for f in findings if f.severity is severity
        )
    attrs["sitscheck.verdicts.total"] = len(report.verdicts)
    for status in Status:
        attrs[f"sitscheck.verdicts.{status.value}"] = sum(
            1 for v in report.verdicts if v.status is status
        )
    return attrs


def _check_attrs(check: CheckResult) -> dict[str, AttrValue | None]:
    return {
        "sitscheck.check.name": check.name,
        "sitscheck.check.status": check.status.value,
        "sitscheck.check.layer": check.layer.value,
        "sitscheck.check.duration_s": float(check.duration_s),
        "sitscheck.check.error": check.error,
        "error.type": _error_type(check.error) if check.error is not None else None,
        "sitscheck.check.skip_reason": check.skip_reason,
        "sitscheck.check.findings": len(check.findings),
        "sitscheck.check.metrics": len(check.metrics),
        "sitscheck.check.not_judged": list(check.not_judged) or None,
    }


def _error_type(error: str) -> str:
    text = error.lower()
    if "timed out" in text or "deadline" in text:
        return "timeout"
    if "failed to load" in text:
        return "plugin_load"
    if text.startswith("internal error"):
        return "internal"
    return "_OTHER"


def _finding_event(
    finding: Finding, check: str, at: int, inventory: Inventory
) -> trace_pb2.Span.Event:
    attrs: dict[str, AttrValue | None] = {
        "sitscheck.check.name": check,
        "sitscheck.finding.code": finding.code,
        "sitscheck.finding.severity": finding.severity.value,
        "sitscheck.finding.message": finding.message,
        "sitscheck.finding.action": finding.action,
    }
    attrs.update(inventory.device_attrs(finding.device))
    if finding.evidence:
        attrs["sitscheck.finding.evidence"] = [
            " ".join(p for p in (e.source, e.ref or "") if p) for e in finding.evidence
        ]
        excerpts = [e.excerpt[:_EXCERPT_CHARS] for e in finding.evidence if e.excerpt]
        attrs["sitscheck.finding.excerpts"] = excerpts or None
    return trace_pb2.Span.Event(time_unix_nano=at, name="sitscheck.finding", attributes=_kvs(attrs))


def _verdict_event(verdict: Verdict, at: int, inventory: Inventory) -> trace_pb2.Span.Event:
    attrs: dict[str, AttrValue | None] = {
        "sitscheck.verdict.rule": verdict.rule,
        "sitscheck.verdict.status": verdict.status.value,
        "sitscheck.verdict.message": verdict.message,
        "sitscheck.verdict.layer": verdict.layer.value,
        "sitscheck.verdict.action": verdict.action,
        "sitscheck.verdict.source": verdict.source,
        "sitscheck.verdict.reason": verdict.reason,
        "sitscheck.verdict.explains": list(verdict.explains) or None,
        "sitscheck.verdict.explained_by": list(verdict.explained_by) or None,
    }
    attrs.update(inventory.device_attrs(verdict.device))
    return trace_pb2.Span.Event(time_unix_nano=at, name="sitscheck.verdict", attributes=_kvs(attrs))


# ---------------------------------------------------------------- metrics


@dataclass
class _Series:
    name: str
    spec: Spec
    points: list[metrics_pb2.NumberDataPoint] = field(default_factory=list)


class _Metrics:
    def __init__(self, at: int, counter_start: int) -> None:
        self.at = at
        self.counter_start = counter_start
        self.series: dict[str, _Series] = {}

    def add(
        self, name: str, spec: Spec, value: float, attrs: Attrs, start: int | None = None
    ) -> None:
        series = self.series.setdefault(name, _Series(name, spec))
        point = metrics_pb2.NumberDataPoint(attributes=_kvs(attrs), time_unix_nano=self.at)
        if spec.kind != GAUGE:
            point.start_time_unix_nano = self.counter_start if start is None else start
        if float(value).is_integer() and abs(value) < 2**63:
            point.as_int = int(value)
        else:
            point.as_double = float(value)
        series.points.append(point)

    def messages(self) -> list[metrics_pb2.Metric]:
        out = []
        for series in self.series.values():
            metric = metrics_pb2.Metric(
                name=series.name, description=series.spec.description, unit=series.spec.unit
            )
            if series.spec.kind == GAUGE:
                metric.gauge.data_points.extend(series.points)
            else:
                metric.sum.data_points.extend(series.points)
                metric.sum.aggregation_temporality = (
                    metrics_pb2.AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE
                )
                metric.sum.is_monotonic = series.spec.kind == COUNTER
            out.append(metric)
        return out


def otel_metric(metric: Metric) -> tuple[str, Spec, float]:
    """A check's metric as (OTel name, instrument, value in the name's unit)."""
    name = metric.name
    spec = HW_METRICS.get(name)
    if spec is not None:
        converted = _convert(metric.value, metric.unit, spec.unit)
        if converted is not None:
            return name, spec, converted
    if not name.startswith("sitscheck.") or name in HW_METRICS:
        name = f"sitscheck.{name}"  # an hw.* name whose unit does not fit is not that metric
    return name, Spec(GAUGE, metric.unit, ""), metric.value


def _convert(value: float, unit: str, wanted: str) -> float | None:
    if unit == wanted:
        return value
    if wanted.startswith("{") and (unit in ("", "1") or re.fullmatch(r"\{[^}]*\}", unit)):
        return value
    known = _UNITS.get(unit.strip())
    if known is None or known[0] != wanted:
        return None
    return value * known[1]


def _gpu_attrs(labels: Mapping[str, str], inventory: Inventory, hw: bool) -> Attrs:
    """The hardware attributes of the device a metric's labels name (the labels then win)."""
    ident = next((labels[k] for k in _GPU_ID_LABELS if labels.get(k)), None)
    bus = next((labels[k] for k in _GPU_BUS_LABELS if labels.get(k)), None)
    index_text = next((labels[k] for k in _GPU_INDEX_LABELS if labels.get(k)), None)
    index = int(index_text) if index_text is not None and index_text.isdigit() else None
    if ident is None and bus is None and index is None:
        return {}
    gpu = inventory.find(index, ident, bus)
    if gpu is not None:
        return inventory.gpu_attrs(gpu)
    if bus is not None and ident is None and index is None:
        # A PCIe device that is not a GPU of the inventory (a port, a switch, a NIC).
        return {"hw.id": _bus_id(bus) or bus, "hw.type": "pci_device"} if hw else {}
    return inventory.gpu_attrs(Gpu(index, ident, _bus_id(bus), None, None))


def build_metrics(report: Report, resource: Attrs, extras: Extras) -> ExportMetricsServiceRequest:
    inventory = Inventory.of(report)
    at = started_ns(report) + _seconds_ns(report.duration_s)
    out = _Metrics(at, extras.counter_start_ns)
    for check in report.checks:
        for metric in check.metrics:
            name, spec, value = otel_metric(metric)
            hw = name.startswith("hw.")
            attrs: Attrs = {
                "sitscheck.check.name": check.name,
                **_gpu_attrs(metric.labels, inventory, hw),
                **metric.labels,
            }
            out.add(name, spec, value, attrs)
    _run_metrics(report, out)
    _gpu_status(report, inventory, out)
    dropped = Spec(COUNTER, "{payload}", "OTLP payloads dropped: spool bounds, or refused.")
    start = extras.dropped_since_ns
    out.add(
        "sitscheck.otlp.dropped",
        dropped,
        extras.dropped_payloads,
        {"sitscheck.drop.reason": "spool_limit"},
        start,
    )
    out.add(
        "sitscheck.otlp.dropped",
        dropped,
        extras.rejected_payloads,
        {"sitscheck.drop.reason": "rejected"},
        start,
    )
    scope = InstrumentationScope(name=SCOPE, version=__version__)
    return ExportMetricsServiceRequest(
        resource_metrics=[
            metrics_pb2.ResourceMetrics(
                resource=Resource(attributes=_kvs(resource)),
                scope_metrics=[metrics_pb2.ScopeMetrics(scope=scope, metrics=out.messages())],
            )
        ]
    )


def _run_metrics(report: Report, out: _Metrics) -> None:
    out.add(
        "sitscheck.run.duration", Spec(GAUGE, "s", "Duration of the run."), report.duration_s, {}
    )
    out.add(
        "sitscheck.run.exit_code",
        Spec(GAUGE, "1", "The run's exit code: 0 ok, 1 warning, 2 critical, 3 unknown."),
        report.exit_code,
        {},
    )
    check_status = Spec(GAUGE, "1", "A check's status as an exit code (0 ok or skipped ... 3).")
    check_duration = Spec(GAUGE, "s", "Duration of a check.")
    for check in report.checks:
        attrs: Attrs = {"sitscheck.check.name": check.name}
        out.add("sitscheck.check.status", check_status, check.status.exit_code, attrs)
        out.add("sitscheck.check.duration", check_duration, check.duration_s, attrs)
    findings = Spec(GAUGE, "{finding}", "Findings of the run by severity.")
    all_findings = [f for c in report.checks for f in c.findings]
    for severity in Severity:
        count = sum(1 for f in all_findings if f.severity is severity)
        out.add(
            "sitscheck.findings", findings, count, {"sitscheck.finding.severity": severity.value}
        )


def _gpu_status(report: Report, inventory: Inventory, out: _Metrics) -> None:
    """hw.status per GPU of the inventory: the worst finding or verdict that names it."""
    statuses: dict[str, list[Status]] = {gpu.hw_id: [] for gpu in inventory.gpus}
    for gpu in inventory.gpus:
        if gpu.state not in (None, "ok"):
            statuses[gpu.hw_id].append(Status.CRITICAL)
    named: Iterable[tuple[Device | None, Status]] = [
        *((f.device, f.severity.as_status()) for c in report.checks for f in c.findings),
        *((v.device, v.status) for v in report.verdicts),
    ]
    for device, status in named:
        if device is None:
            continue
        attrs = inventory.device_attrs(device)
        hw_id = attrs.get("hw.id")
        if isinstance(hw_id, str) and hw_id in statuses:
            statuses[hw_id].append(status)
    spec = HW_METRICS["hw.status"]
    for gpu in inventory.gpus:
        state = {
            Status.OK: "ok",
            Status.SKIPPED: "ok",
            Status.WARNING: "degraded",
            Status.CRITICAL: "failed",
        }.get(worst(statuses[gpu.hw_id]))  # unknown: no state is 1
        for candidate in _HW_STATES:
            attrs = {**inventory.gpu_attrs(gpu), "hw.state": candidate}
            out.add("hw.status", spec, 1 if candidate == state else 0, attrs)


def build_payloads(
    report: Report, resource: Attrs, extras: Extras, trace_id: bytes | None = None
) -> Payloads:
    trace_id = trace_id or secrets.token_bytes(16)
    traces = build_traces(report, resource, trace_id)
    metrics = build_metrics(report, resource, extras)
    return Payloads(
        traces=traces.SerializeToString(deterministic=True),
        metrics=metrics.SerializeToString(deterministic=True),
        trace_id=trace_id,
        run_time_ns=started_ns(report),
    )
