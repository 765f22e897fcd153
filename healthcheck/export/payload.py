"""A report as OTLP requests: one trace and one batch of metrics per run, serialised once.

The bytes built here are what is sent and what is spooled, so a payload sent late is the
payload the run made (same trace and span ids, same timestamps).

Trace: root span `sitscheck.run` (from `started_at`, for `duration_s`) with the run's status,
profile, host and counts as attributes and one `sitscheck.verdict` event per rule verdict;
a child span `check <name>` per check (its status, layer, duration, error), each finding a
`sitscheck.finding` event on it. The OTel span status: ERROR on the root when the run is
critical (its message the headline: a backend's error view shows the broken node) or when a
check could not run; ERROR on a check's span only when that check could not run (it has an
`error`: crashed, timed out, failed to load), its critical findings being
`sitscheck.check.status=critical`; UNSET everywhere else.

Metrics: every metric of every check, one data point per run (per GPU for a per-GPU metric,
as the check labels it), by the hardware semantic conventions (`semconv.py`: names,
instruments, units, `hw.errors`, sensors, the `sitscheck.` prefix of other attributes).
A GPU named by a metric's labels (`hw.id`, `gpu.index`; or `uuid`, `pci_bus_id`, `device`)
gets the hardware attributes from the driver check's inventory: `hw.id` (UUID, else bus id,
else `gpu<index>`), `hw.type=gpu`, `hw.name` (`GPU 0`), `hw.model`, `hw.vendor`,
`hw.firmware_version` (VBIOS), `hw.driver_version`, `sitscheck.gpu.index`,
`sitscheck.gpu.pci_bus_id`; a check's own label wins over these. Added per run: `hw.status`
per GPU (ok, degraded, failed from the worst finding or verdict naming it; predicted_failure
for a pending row remap or page retirement; no state 1 when that is unknown),
`sitscheck.run.duration`, `sitscheck.run.exit_code`, `sitscheck.check.status`,
`sitscheck.check.duration`, `sitscheck.findings` and `sitscheck.otlp.dropped`.

Built on the OpenTelemetry SDK's data model (`ReadableSpan`, `MetricsData`) and encoded by the
OTLP exporter package's own encoders (`encode_spans`, `encode_metrics`), then serialised once,
deterministically: the run's own timestamps (a replay keeps the bundle's), counter start
times and ids are set here, not by a provider's clock, and the spooled bytes are the bytes
sent, however late.
"""

from __future__ import annotations

import platform
import secrets
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from pathlib import Path

from msgspec import Struct, field
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Gauge,
    MetricsData,
    NumberDataPoint,
    ResourceMetrics,
    ScopeMetrics,
    Sum,
)
from opentelemetry.sdk.metrics.export import Metric as OtelMetric
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags
from opentelemetry.trace import Status as SpanStatus
from opentelemetry.trace import StatusCode as SpanStatusCode

from .. import __version__
from ..models import (
    CheckResult,
    Finding,
    Report,
    Severity,
    Status,
    Verdict,
)
from .inventory import HW_STATES, Inventory, gpu_health
from .semconv import (
    COUNTER,
    GAUGE,
    HW_METRICS,
    START_UNKNOWN,
    Attrs,
    AttrValue,
    Spec,
    otel_point,
)

SCOPE = "sitscheck"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_EXCERPT_CHARS = 1000


class HostInfo(Struct, frozen=True):
    """What the resource says of the machine: only for a live run (a replay is another host)."""

    host_id: str | None = None
    host_arch: str | None = None
    os_type: str | None = None
    os_name: str | None = None
    os_version: str | None = None
    os_description: str | None = None


class Extras(Struct, frozen=True):
    """What the metrics add beyond the report: the spool's drop counts."""

    dropped_payloads: int = 0
    rejected_payloads: int = 0
    dropped_since_ns: int = 0
    counter_start_ns: int = 0  # start of cumulative hardware counters (boot), 0 = unknown


class Payloads(Struct, frozen=True):
    """A run's two serialised requests (traces, metrics), its trace id and start time."""

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


# ---------------------------------------------------------------- values and times


def _kept(attrs: Mapping[str, AttrValue | None]) -> dict[str, AttrValue]:
    return {k: v for k, v in attrs.items() if v is not None}


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


def _resource(attrs: Attrs) -> Resource:
    return Resource(attrs)


def _scope() -> InstrumentationScope:
    return InstrumentationScope(name=SCOPE, version=__version__)


def _context(trace_id: bytes, span_id: bytes) -> SpanContext:
    return SpanContext(
        int.from_bytes(trace_id, "big"),
        int.from_bytes(span_id, "big"),
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


def build_traces(
    report: Report, resource: Attrs, trace_id: bytes | None = None
) -> ExportTraceServiceRequest:
    """The run's spans, encoded by the exporter's encoder."""
    return encode_spans(run_spans(report, resource, trace_id))


def run_spans(report: Report, resource: Attrs, trace_id: bytes | None = None) -> list[ReadableSpan]:
    """The run as SDK spans, with its own times and ids."""
    inventory = Inventory.of(report)
    trace_id = trace_id or secrets.token_bytes(16)
    start = started_ns(report)
    end = start + _seconds_ns(report.duration_s)
    root = _context(trace_id, secrets.token_bytes(8))
    sdk_resource, scope = _resource(resource), _scope()
    spans = [
        ReadableSpan(
            name="sitscheck.run",
            context=root,
            resource=sdk_resource,
            attributes=_kept(_run_attrs(report)),
            events=[_verdict_event(v, end, inventory) for v in report.verdicts],
            kind=SpanKind.INTERNAL,
            status=_status(_run_error(report)),
            start_time=start,
            end_time=end,
            instrumentation_scope=scope,
        )
    ]
    for check in report.checks:
        check_end = min(start + _seconds_ns(check.duration_s), end) if end > start else start
        spans.append(
            ReadableSpan(
                name=f"check {check.name}",
                context=_context(trace_id, secrets.token_bytes(8)),
                parent=root,
                resource=sdk_resource,
                attributes=_kept(_check_attrs(check)),
                events=[
                    _finding_event(f, check.name, check_end, inventory) for f in check.findings
                ],
                kind=SpanKind.INTERNAL,
                status=_status(check.error),
                start_time=start,
                end_time=check_end,
                instrumentation_scope=scope,
            )
        )
    return spans


def _run_error(report: Report) -> str | None:
    """The root span's error: the headline of a critical run, and the checks that could not
    run; None when neither."""
    errored = [c.name for c in report.checks if c.error is not None]
    parts = [report.headline] if report.status is Status.CRITICAL else []
    if errored:
        parts.append(f"{len(errored)} check(s) could not run: {', '.join(errored)}")
    return "; ".join(parts) or None


def _status(error: str | None) -> SpanStatus:
    if error is None:
        return SpanStatus(SpanStatusCode.UNSET)
    return SpanStatus(SpanStatusCode.ERROR, error)


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


def _finding_event(finding: Finding, check: str, at: int, inventory: Inventory) -> Event:
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
    return Event("sitscheck.finding", _kept(attrs), at)


def _verdict_event(verdict: Verdict, at: int, inventory: Inventory) -> Event:
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
    return Event("sitscheck.verdict", _kept(attrs), at)


# ---------------------------------------------------------------- metrics


class _Series(Struct):
    """One metric's data points as they are gathered: one point per attribute set."""

    name: str
    spec: Spec
    points: list[NumberDataPoint] = field(default_factory=list)
    seen: set[tuple[tuple[str, str], ...]] = field(default_factory=set)


class _Metrics:
    def __init__(self, at: int, counter_start: int) -> None:
        self.at = at
        self.counter_start = counter_start
        self.series: dict[str, _Series] = {}

    def add(
        self, name: str, spec: Spec, value: float, attrs: Attrs, start: int | None = None
    ) -> None:
        series = self.series.setdefault(name, _Series(name, spec))
        key = tuple(sorted((k, repr(v)) for k, v in attrs.items()))
        if key in series.seen:  # one point per series and run (a duplicate would be dropped)
            return
        series.seen.add(key)
        number: int | float = float(value)
        if float(value).is_integer() and abs(value) < 2**63:
            number = int(value)
        if spec.kind == GAUGE:
            start_ns = 0
        else:
            start_ns = self.counter_start if start is None else start
        series.points.append(NumberDataPoint(dict(attrs), start_ns, self.at, number))

    def metrics(self) -> list[OtelMetric]:
        out = []
        for series in self.series.values():
            data: Gauge | Sum
            if series.spec.kind == GAUGE:
                data = Gauge(data_points=series.points)
            else:
                data = Sum(
                    data_points=series.points,
                    aggregation_temporality=AggregationTemporality.CUMULATIVE,
                    is_monotonic=series.spec.kind == COUNTER,
                )
            out.append(OtelMetric(series.name, series.spec.description, series.spec.unit, data))
        return out


def _gpu_attrs(labels: Mapping[str, str], inventory: Inventory, hw: bool) -> Attrs:
    """The hardware attributes of the device a metric's labels name (the labels then win)."""
    gpu, other_bus = inventory.locate(labels)
    if gpu is not None:
        return inventory.gpu_attrs(gpu)
    if other_bus is not None:  # a PCIe device that is not a GPU (a port, a switch, a NIC)
        return {"hw.id": other_bus, "hw.type": "pci_device"} if hw else {}
    return {}


def build_metrics(report: Report, resource: Attrs, extras: Extras) -> ExportMetricsServiceRequest:
    """The run's metrics, encoded by the exporter's encoder."""
    return encode_metrics(run_metrics(report, resource, extras))


def run_metrics(report: Report, resource: Attrs, extras: Extras) -> MetricsData:
    """The run's metrics in the SDK's data model, with their own times and start times."""
    inventory = Inventory.of(report)
    at = started_ns(report) + _seconds_ns(report.duration_s)
    out = _Metrics(at, extras.counter_start_ns)
    for check in report.checks:
        for metric in check.metrics:
            point = otel_point(metric)
            hw = point.name.startswith("hw.")
            attrs: Attrs = {
                "sitscheck.check.name": check.name,
                **_gpu_attrs(metric.labels, inventory, hw),
                **point.attrs,
            }
            if point.sensor is not None:
                attrs = _sensor_attrs(attrs, point.sensor)
            start = 0 if point.start == START_UNKNOWN else None
            out.add(point.name, point.spec, point.value, attrs, start)
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
    return MetricsData(
        resource_metrics=[
            ResourceMetrics(
                resource=_resource(resource),
                scope_metrics=[ScopeMetrics(scope=_scope(), metrics=out.metrics(), schema_url="")],
                schema_url="",
            )
        ]
    )


def _sensor_attrs(attrs: Attrs, location: str) -> Attrs:
    """A temperature reading on its sensor entity: `hw.type=temperature`, the sensor's own
    `hw.id`, the component it sits on as `hw.parent`."""
    parent = str(attrs.get("hw.id", ""))
    name = attrs.get("hw.name")
    sensor: Attrs = {
        key: value
        for key, value in attrs.items()
        if key not in ("hw.model", "hw.vendor", "hw.firmware_version", "hw.driver_version")
    }
    sensor.update(
        {
            "hw.id": f"{parent}/temperature/{location}" if parent else f"temperature/{location}",
            "hw.type": "temperature",
            "hw.sensor_location": location,
        }
    )
    if parent:
        sensor["hw.parent"] = parent
    if name:
        sensor["hw.name"] = f"{name} {location} temperature"
    return sensor


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
    """hw.status per GPU of the inventory (`gpu_health`): one of its states 1, or none when
    the GPU's health is unknown."""
    spec = HW_METRICS["hw.status"]
    health = gpu_health(report, inventory)
    for gpu in inventory.gpus:
        state = health[gpu.hw_id].state
        for candidate in HW_STATES:
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
