"""The OTLP payloads a report becomes: spans, events, attributes, metrics, resource."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1 import trace_pb2
from otel_samples import UUID0, UUID1, sample_report
from otlp_decode import attrs, metrics_of, point, points, spans_of
from sitscheck.export.payload import (
    Extras,
    HostInfo,
    build_payloads,
    detect_host,
    resource_attributes,
)
from sitscheck.models import Device, Finding, Metric, Report, Severity, Status

ERROR = trace_pb2.Status.STATUS_CODE_ERROR
UNSET = trace_pb2.Status.STATUS_CODE_UNSET
START_NS = 1795975396_250000_000  # 2026-11-29T18:03:16.25Z


def decoded(
    report: Report, extras: Extras | None = None
) -> tuple[ExportTraceServiceRequest, ExportMetricsServiceRequest]:
    resource = resource_attributes(report, HostInfo(host_id="m-1", os_type="linux"), None, {})
    payloads = build_payloads(report, resource, extras or Extras())
    return (
        ExportTraceServiceRequest.FromString(payloads.traces),
        ExportMetricsServiceRequest.FromString(payloads.metrics),
    )


@pytest.fixture(scope="module")
def sample() -> tuple[ExportTraceServiceRequest, ExportMetricsServiceRequest]:
    return decoded(sample_report(), Extras(dropped_payloads=4, rejected_payloads=1))


def by_name(spans: list[Any]) -> dict[str, Any]:
    return {s.name: s for s in spans}


def test_one_trace_with_a_root_span_and_a_child_per_check(sample: Any) -> None:
    spans = spans_of(sample[0])
    assert [s.name for s in spans] == [
        "sitscheck.run",
        "check driver",
        "check gpu_telemetry",
        "check memory_errors",
        "check xid",
        "check tensorrt",
    ]
    root = spans[0]
    assert len(root.trace_id) == 16 and len(root.span_id) == 8
    assert root.parent_span_id == b""
    assert {s.trace_id for s in spans} == {root.trace_id}
    assert all(s.parent_span_id == root.span_id for s in spans[1:])
    assert len({s.span_id for s in spans}) == len(spans)
    assert all(s.kind == trace_pb2.Span.SPAN_KIND_INTERNAL for s in spans)


def test_span_times_come_from_started_at_and_durations(sample: Any) -> None:
    spans = by_name(spans_of(sample[0]))
    root = spans["sitscheck.run"]
    assert root.start_time_unix_nano == START_NS
    assert root.end_time_unix_nano == START_NS + 21_500_000_000
    telemetry = spans["check gpu_telemetry"]
    assert telemetry.start_time_unix_nano == START_NS
    assert telemetry.end_time_unix_nano == START_NS + 3_200_000_000
    assert telemetry.events[0].time_unix_nano == telemetry.end_time_unix_nano


def test_root_span_attributes_hold_host_profile_status_and_counts(sample: Any) -> None:
    root = by_name(spans_of(sample[0]))["sitscheck.run"]
    got = attrs(root.attributes)
    assert got["host.name"] == "gpu-node-7"
    assert got["sitscheck.profile"] == "h200"
    assert got["sitscheck.status"] == "critical"
    assert got["sitscheck.exit_code"] == 2
    assert got["sitscheck.mode"] == "live"
    assert got["sitscheck.checks.total"] == 5
    assert got["sitscheck.checks.errored"] == 1
    assert (got["sitscheck.checks.ok"], got["sitscheck.checks.skipped"]) == (1, 1)
    assert (got["sitscheck.findings.total"], got["sitscheck.findings.critical"]) == (3, 1)
    assert (got["sitscheck.verdicts.total"], got["sitscheck.verdicts.critical"]) == (2, 1)


def test_span_status_is_error_only_where_a_check_could_not_run(sample: Any) -> None:
    spans = by_name(spans_of(sample[0]))
    xid = spans["check xid"]
    assert xid.status.code == ERROR
    assert "timed out" in xid.status.message
    xid_attrs = attrs(xid.attributes)
    assert xid_attrs["sitscheck.check.status"] == "unknown"
    assert xid_attrs["error.type"] == "timeout"
    # a critical check is a sitscheck status, not an OTel error
    memory = spans["check memory_errors"]
    assert memory.status.code == UNSET
    assert attrs(memory.attributes)["sitscheck.check.status"] == "critical"
    assert spans["check tensorrt"].status.code == UNSET
    assert attrs(spans["check tensorrt"].attributes)["sitscheck.check.skip_reason"]
    root = spans["sitscheck.run"]
    assert root.status.code == ERROR and "1 check(s) could not run: xid" in root.status.message


def test_a_critical_run_is_an_error_on_its_root_span_with_the_headline() -> None:
    """Issue 29 item 14: a critical run's root span is ERROR, its message the headline (a
    backend's error view shows the broken node); its check spans stay UNSET."""
    report = sample_report()
    report.checks = [c for c in report.checks if c.error is None]
    assert report.status is Status.CRITICAL
    spans = spans_of(decoded(report)[0])
    assert (spans[0].status.code, spans[0].status.message) == (ERROR, report.headline)
    assert {s.status.code for s in spans[1:]} == {UNSET}


@pytest.mark.parametrize("status", [Status.OK, Status.WARNING])
def test_no_error_status_when_every_check_ran_and_none_is_critical(status: Status) -> None:
    report = sample_report()
    report.checks = [c for c in report.checks if c.error is None]
    report.status = status
    traces, _ = decoded(report)
    assert {s.status.code for s in spans_of(traces)} == {UNSET}


def test_every_count_attribute_is_an_int_on_the_wire(sample: Any) -> None:
    """`sitscheck.check.findings` and the other counts are OTLP int values (a JSON view of
    OTLP shows int64 as a string: that is protobuf's JSON mapping, not the attribute)."""
    for span in spans_of(sample[0]):
        for item in span.attributes:
            if item.key.endswith(("findings", "metrics", "exit_code", "total", "errored")):
                assert item.value.WhichOneof("value") == "int_value", item.key


def test_a_finding_is_an_event_on_its_check_span(sample: Any) -> None:
    spans = by_name(spans_of(sample[0]))
    events = spans["check memory_errors"].events
    assert [e.name for e in events] == ["sitscheck.finding", "sitscheck.finding"]
    dbe = attrs(events[0].attributes)
    assert dbe["sitscheck.finding.code"] == "memory_errors.dbe_volatile"
    assert dbe["sitscheck.finding.severity"] == "critical"
    assert dbe["sitscheck.finding.message"] == "GPU 0: 2 volatile double-bit ECC errors"
    assert dbe["sitscheck.finding.action"] == "drain the node and reset the GPU"
    assert dbe["hw.id"] == UUID0
    assert (dbe["hw.type"], dbe["hw.name"], dbe["hw.model"]) == ("gpu", "GPU 0", "NVIDIA H200")
    note = attrs(events[1].attributes)
    assert "hw.id" not in note and "sitscheck.finding.action" not in note
    slowdown = attrs(spans["check gpu_telemetry"].events[0].attributes)
    assert slowdown["hw.id"] == UUID1  # the bus id 00000000:00:07.0 names GPU 1
    assert slowdown["sitscheck.finding.evidence"] == ["nvml nvmlDeviceGetClocksEventReasons"]
    assert not spans["check driver"].events


def test_a_verdict_is_an_event_on_the_root_span(sample: Any) -> None:
    root = by_name(spans_of(sample[0]))["sitscheck.run"]
    assert [e.name for e in root.events] == ["sitscheck.verdict", "sitscheck.verdict"]
    ecc = attrs(root.events[0].attributes)
    assert ecc["sitscheck.verdict.rule"] == "gpu.ecc_dbe"
    assert ecc["sitscheck.verdict.status"] == "critical"
    assert ecc["sitscheck.verdict.explains"] == ["xid.48"]
    assert ecc["sitscheck.verdict.action"] == "replace the GPU"
    assert ecc["hw.id"] == UUID0
    assert root.events[0].time_unix_nano == root.end_time_unix_nano


def test_hardware_metrics_keep_the_conventions_instrument_and_unit(sample: Any) -> None:
    metrics = metrics_of(sample[1])
    util = metrics["hw.gpu.utilization"]
    assert (util.unit, util.WhichOneof("data")) == ("1", "gauge")
    assert point(util, **{"hw.id": UUID0}) == pytest.approx(0.97)
    assert point(util, **{"hw.id": UUID1}) == pytest.approx(0.12)  # 12 % as a fraction
    power = metrics["hw.power"]
    assert (power.unit, power.WhichOneof("data")) == ("W", "gauge")
    assert point(power, **{"hw.id": UUID1}) == pytest.approx(120.5)  # from mW
    memory = metrics["hw.gpu.memory.usage"]
    assert (memory.unit, memory.WhichOneof("data")) == ("By", "sum")
    assert not memory.sum.is_monotonic
    assert point(memory, **{"hw.id": UUID0}) == 1024 * 1024 * 1024
    errors = metrics["hw.errors"]
    assert (errors.unit, errors.WhichOneof("data")) == ("{error}", "sum")
    assert errors.sum.is_monotonic
    assert errors.sum.aggregation_temporality == 2  # cumulative
    assert point(errors, **{"hw.id": UUID0, "error.type": "uncorrected"}) == 2
    port = point(errors, **{"hw.id": "0000:80:01.0"})
    assert port == 5
    (port_attrs,) = [a for a, _ in points(errors) if a["hw.id"] == "0000:80:01.0"]
    assert port_attrs["hw.type"] == "pci_device"
    assert port_attrs["error.type"] == "corrected"  # pcie_aer_corrected, by the conventions
    assert port_attrs["sitscheck.error.source"] == "pcie_aer"


def test_per_gpu_points_carry_the_gpu_identity(sample: Any) -> None:
    (attrs0,) = [a for a, _ in points(metrics_of(sample[1])["hw.power"]) if a["hw.id"] == UUID0]
    assert attrs0["hw.type"] == "gpu"
    assert attrs0["hw.name"] == "GPU 0"
    assert attrs0["hw.model"] == "NVIDIA H200"
    assert attrs0["hw.vendor"] == "NVIDIA"
    assert attrs0["hw.firmware_version"] == "96.00.A5.00.1A"
    assert attrs0["hw.driver_version"] == "580.159.04"
    assert attrs0["sitscheck.gpu.index"] == "0"  # not a convention's name: under our prefix
    assert attrs0["sitscheck.gpu.pci_bus_id"] == "0000:00:06.0"
    assert attrs0["sitscheck.check.name"] == "gpu_telemetry"


def test_other_metrics_are_sitscheck_gauges_in_their_units(sample: Any) -> None:
    metrics = metrics_of(sample[1])
    count = metrics["sitscheck.gpu.number"]
    assert (count.unit, count.WhichOneof("data")) == ("{gpu}", "gauge")
    assert points(count)[0][1] == 2
    clock = metrics["sitscheck.gpu.clock"]
    assert clock.unit == "MHz" and point(clock, **{"hw.id": UUID0}) == 1980
    # a rate (By/s) is not the byte counter hw.gpu.io: it keeps its unit under our name
    assert "hw.gpu.io" not in metrics
    assert metrics["sitscheck.hw.gpu.io"].unit == "By/s"


def test_one_point_per_run_per_gpu(sample: Any) -> None:
    for name in ("hw.gpu.utilization", "hw.power"):
        ids = [a["hw.id"] for a, _ in points(metrics_of(sample[1])[name])]
        assert sorted(ids) == sorted([UUID0, UUID1])


def test_metric_points_are_stamped_at_the_end_of_the_run(sample: Any) -> None:
    for metric in metrics_of(sample[1]).values():
        data = metric.gauge if metric.WhichOneof("data") == "gauge" else metric.sum
        assert {p.time_unix_nano for p in data.data_points} == {START_NS + 21_500_000_000}


def test_gpu_status_follows_the_worst_finding_or_verdict_naming_it(sample: Any) -> None:
    status = metrics_of(sample[1])["hw.status"]
    assert status.unit == "1" and status.WhichOneof("data") == "sum"
    assert point(status, **{"hw.id": UUID0, "hw.state": "failed"}) == 1
    assert point(status, **{"hw.id": UUID0, "hw.state": "ok"}) == 0
    assert point(status, **{"hw.id": UUID1, "hw.state": "degraded"}) == 1
    assert point(status, **{"hw.id": UUID1, "hw.state": "failed"}) == 0


def test_run_metrics(sample: Any) -> None:
    metrics = metrics_of(sample[1])
    assert points(metrics["sitscheck.run.exit_code"])[0][1] == 2
    assert metrics["sitscheck.run.duration"].unit == "s"
    status = metrics["sitscheck.check.status"]
    assert point(status, **{"sitscheck.check.name": "xid"}) == 3
    assert point(status, **{"sitscheck.check.name": "memory_errors"}) == 2
    findings = metrics["sitscheck.findings"]
    assert point(findings, **{"sitscheck.finding.severity": "critical"}) == 1


def test_counters_start_at_their_origin() -> None:
    extras = Extras(dropped_since_ns=1_700_000_000 * 10**9, counter_start_ns=1_790_000_000 * 10**9)
    _, metrics = decoded(sample_report(), extras)
    got = metrics_of(metrics)
    errors = {p.start_time_unix_nano for p in got["hw.errors"].sum.data_points}
    assert errors == {extras.counter_start_ns}  # hardware counters count from the boot
    dropped = {p.start_time_unix_nano for p in got["sitscheck.otlp.dropped"].sum.data_points}
    assert dropped == {extras.dropped_since_ns}  # ours from when the spool began counting
    assert all(p.start_time_unix_nano == 0 for p in got["hw.power"].gauge.data_points)


def test_dropped_payloads_are_a_counter(sample: Any) -> None:
    dropped = metrics_of(sample[1])["sitscheck.otlp.dropped"]
    assert dropped.sum.is_monotonic
    assert point(dropped, **{"sitscheck.drop.reason": "spool_limit"}) == 4
    assert point(dropped, **{"sitscheck.drop.reason": "rejected"}) == 1


def test_resource_follows_the_conventions() -> None:
    report = sample_report()
    host = HostInfo(host_id="abc123", host_arch="amd64", os_type="linux", os_version="6.8.0")
    got = resource_attributes(report, host, None, {"deployment.environment.name": "prod"})
    assert got["service.name"] == "sitscheck"
    assert got["service.version"] == report.sitscheck_version
    assert got["host.name"] == "gpu-node-7"
    assert (got["host.id"], got["host.arch"]) == ("abc123", "amd64")
    assert (got["os.type"], got["os.version"]) == ("linux", "6.8.0")
    assert got["deployment.environment.name"] == "prod"
    # OTEL_RESOURCE_ATTRIBUTES may rename; OTEL_SERVICE_NAME wins over its service.name
    renamed = resource_attributes(
        report, host, "gpu-health", {"service.name": "x", "host.name": "n"}
    )
    assert (renamed["service.name"], renamed["host.name"]) == ("gpu-health", "n")
    traces, metrics = decoded(report)
    assert attrs(traces.resource_spans[0].resource.attributes)["service.name"] == "sitscheck"
    assert attrs(metrics.resource_metrics[0].resource.attributes)["host.id"] == "m-1"
    scope = traces.resource_spans[0].scope_spans[0].scope
    assert (scope.name, scope.version) == ("sitscheck", report.sitscheck_version)


def test_a_replayed_report_describes_the_bundle_host_not_this_machine(
    replayed_report: Report,
) -> None:
    assert detect_host(replayed_report) == HostInfo()
    live = sample_report()
    host = detect_host(live)
    assert host.os_type == "linux"


def test_payloads_are_deterministic_bytes_of_one_run() -> None:
    report = sample_report()
    resource = resource_attributes(report, HostInfo(), None, {})
    first = build_payloads(report, resource, Extras(), trace_id=b"\x01" * 16)
    assert first.run_time_ns == START_NS
    assert ExportTraceServiceRequest.FromString(first.traces).resource_spans[0].scope_spans[0]
    assert (
        spans_of(ExportTraceServiceRequest.FromString(first.traces))[0].trace_id == first.trace_id
    )
    second = build_payloads(report, resource, Extras())
    assert second.trace_id != first.trace_id  # random ids: two exports are two traces
    assert first.metrics == build_payloads(report, resource, Extras()).metrics


# ---------------------------------------------------------------- hardware conventions


def convention_report(**remap: bool) -> Report:
    """The sample report with a sampled temperature, ECC volatile and aggregate counts."""
    report = sample_report()
    labels0 = {"hw.id": UUID0, "gpu.index": "0"}
    telemetry = report.check("gpu_telemetry")
    memory = report.check("memory_errors")
    assert telemetry is not None and memory is not None
    for stat, value in (("min", 31.0), ("mean", 33.5), ("p95", 36.0), ("max", 37.0)):
        telemetry.metrics.append(
            Metric(
                name="hw.temperature",
                value=value,
                unit="Cel",
                labels={**labels0, "hw.sensor_location": "gpu", "stat": stat},
            )
        )
    memory.metrics = [
        Metric(
            name="hw.errors",
            value=value,
            unit="{error}",
            labels={**labels0, "error.type": f"ecc_{kind}", "hw.type": "gpu", "ecc.scope": scope},
        )
        for scope, kind, value in (
            ("volatile", "corrected", 3),
            ("volatile", "uncorrected", 0),
            ("aggregate", "corrected", 40),
            ("aggregate", "uncorrected", 1),
        )
    ]
    memory.metrics.append(
        Metric(
            name="sitscheck.gpu.memory.remapped_rows",
            value=1,
            unit="{row}",
            labels={**labels0, "kind": "corrected"},
        )
    )
    if remap.get("pending"):
        memory.findings = [
            Finding(
                code="memory_errors.remap_pending",
                severity=Severity.WARNING,
                message="GPU 0: a row remap is pending",
                device=Device(index=0, pci_bus_id="0000:00:06.0"),
            )
        ]
        memory.status = Status.WARNING
        report.verdicts = []
    return report


def test_volatile_and_aggregate_ecc_counts_are_never_one_metric() -> None:
    extras = Extras(counter_start_ns=1_790_000_000 * 10**9)
    _, metrics = decoded(convention_report(), extras)
    got = metrics_of(metrics)
    errors, lifetime = got["hw.errors"], got["sitscheck.hw.errors.aggregate"]
    assert point(errors, **{"hw.id": UUID0, "error.type": "corrected"}) == 3
    assert point(errors, **{"hw.id": UUID0, "error.type": "uncorrected"}) == 0
    assert point(lifetime, **{"hw.id": UUID0, "error.type": "corrected"}) == 40
    assert all("sitscheck.ecc.scope" not in a and "ecc.scope" not in a for a, _ in points(errors))
    # the volatile counts start at the boot; the lifetime ones before anything we know of
    assert {p.start_time_unix_nano for p in errors.sum.data_points} == {extras.counter_start_ns}
    assert {p.start_time_unix_nano for p in lifetime.sum.data_points} == {0}
    assert lifetime.sum.is_monotonic


def test_a_sampled_gauge_is_one_series_its_statistics_their_own_metrics() -> None:
    _, metrics = decoded(convention_report())
    got = metrics_of(metrics)
    temperature = got["hw.temperature"]
    assert [v for _, v in points(temperature)] == [33.5]  # the mean, one point, no `stat`
    assert all("stat" not in a and "sitscheck.stat" not in a for a, _ in points(temperature))
    assert points(got["sitscheck.hw.temperature.window.max"])[0][1] == 37.0
    assert points(got["sitscheck.hw.temperature.window.p95"])[0][1] == 36.0
    for metric in got.values():
        for attributes, _ in points(metric):
            assert "stat" not in attributes


def test_temperature_is_on_a_sensor_whose_parent_is_the_gpu() -> None:
    _, metrics = decoded(convention_report())
    ((sensor, _),) = points(metrics_of(metrics)["hw.temperature"])
    assert sensor["hw.type"] == "temperature"
    assert sensor["hw.parent"] == UUID0
    assert sensor["hw.id"] != UUID0 and sensor["hw.id"].startswith(UUID0)
    assert sensor["hw.sensor_location"] == "gpu"


def test_attributes_not_of_the_conventions_are_prefixed() -> None:
    _, metrics = decoded(convention_report())
    for metric in metrics_of(metrics).values():
        for attributes, _ in points(metric):
            for key in attributes:
                assert key.startswith(("hw.", "sitscheck.", "error.type", "network.io.")), key
    (rows,) = points(metrics_of(metrics)["sitscheck.gpu.memory.remapped_rows"])
    assert rows[0]["sitscheck.kind"] == "corrected"


def test_a_pending_row_remap_is_a_predicted_failure() -> None:
    _, metrics = decoded(convention_report(pending=True))
    status = metrics_of(metrics)["hw.status"]
    assert point(status, **{"hw.id": UUID0, "hw.state": "predicted_failure"}) == 1
    assert point(status, **{"hw.id": UUID0, "hw.state": "degraded"}) == 0
    assert point(status, **{"hw.id": UUID0, "hw.state": "ok"}) == 0
    # the critical verdict of the sample report still makes it failed
    _, plain = decoded(convention_report())
    assert point(metrics_of(plain)["hw.status"], **{"hw.id": UUID0, "hw.state": "failed"}) == 1


def test_memory_usage_limit_and_energy_go_out_as_the_conventions_instruments() -> None:
    report = sample_report()
    telemetry = report.check("gpu_telemetry")
    assert telemetry is not None
    labels0 = {"hw.id": UUID0, "gpu.index": "0"}
    telemetry.metrics = [
        Metric(name="hw.gpu.memory.usage", value=2048, unit="MiB", labels=labels0),
        Metric(name="hw.gpu.memory.limit", value=143771, unit="MiB", labels=labels0),
        Metric(name="hw.energy", value=123456789, unit="mJ", labels=labels0),
    ]
    _, metrics = decoded(report)
    got = metrics_of(metrics)
    limit = got["hw.gpu.memory.limit"]
    assert (limit.unit, limit.WhichOneof("data"), limit.sum.is_monotonic) == ("By", "sum", False)
    assert point(limit, **{"hw.id": UUID0}) == 143771 * 1024 * 1024
    energy = got["hw.energy"]
    assert (energy.unit, energy.sum.is_monotonic) == ("J", True)
    assert point(energy, **{"hw.id": UUID0}) == pytest.approx(123456.789)


def test_a_declared_counter_is_a_cumulative_sum() -> None:
    report = sample_report()
    memory = report.check("memory_errors")
    assert memory is not None
    memory.metrics = [
        Metric(
            name="sitscheck.gpu.memory.remapped_rows",
            value=3,
            unit="{row}",
            labels={"hw.id": UUID0, "gpu.index": "0", "kind": "corrected"},
            kind="counter",
        )
    ]
    _, metrics = decoded(report, Extras(counter_start_ns=5 * 10**18))
    rows = metrics_of(metrics)["sitscheck.gpu.memory.remapped_rows"]
    assert rows.WhichOneof("data") == "sum" and rows.sum.is_monotonic
    assert rows.sum.data_points[0].start_time_unix_nano == 5 * 10**18
