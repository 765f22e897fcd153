"""A run exported to a real OTLP receiver over a socket, for gRPC and HTTP/protobuf."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from otel_samples import REPO, TOKEN, UUID0, UUID1, sample_report, settings_for
from otlp_decode import attrs, metrics_of, point, points
from receivers import GrpcReceiver, HttpReceiver
from sitscheck.export.otel import ExportResult, export_report
from sitscheck.models import Report

RECEIVERS = [GrpcReceiver, HttpReceiver]
IDS = ["grpc", "http"]


def export(report: Report, receiver: Any, state: Path, **extra: Any) -> ExportResult:
    settings = settings_for(receiver.endpoint, receiver.protocol, **extra)
    return export_report(report, settings, state, timeout_s=5.0)


def received_metrics(receiver: Any) -> dict[str, Any]:
    (request,) = receiver.recorder.of("metrics")
    return metrics_of(request)


@pytest.mark.parametrize("kind", RECEIVERS, ids=IDS)
def test_replayed_bundle_reaches_the_receiver(
    kind: Any, replayed_report: Report, tmp_path: Path
) -> None:
    report = replayed_report
    with kind() as receiver:
        result = export(report, receiver, tmp_path)
    assert result.errors == []
    assert result.current_delivered and result.pending == 0
    spans = receiver.recorder.spans()
    assert len(receiver.recorder.of("traces")) == 1
    # the root and one child per check, each with the check's status; an event per finding
    root = next(s for s in spans if s.name == "sitscheck.run")
    assert result.trace_id == root.trace_id.hex()
    root_attrs = attrs(root.attributes)
    assert root_attrs["host.name"] == "vm"
    assert root_attrs["sitscheck.status"] == report.status.value
    assert root_attrs["sitscheck.bundle"] == report.bundle
    assert root_attrs["sitscheck.checks.total"] == len(report.checks)
    assert len(root.events) == len(report.verdicts)
    children = {s.name: s for s in spans if s.parent_span_id == root.span_id}
    assert set(children) == {f"check {c.name}" for c in report.checks}
    for check in report.checks:
        span = children[f"check {check.name}"]
        got = attrs(span.attributes)
        assert got["sitscheck.check.status"] == check.status.value
        assert (span.status.code == 2) == (check.error is not None)
        assert [attrs(e.attributes)["sitscheck.finding.code"] for e in span.events] == [
            f.code for f in check.findings
        ]
    resource = attrs(receiver.recorder.of("traces")[0].resource_spans[0].resource.attributes)
    assert resource["service.name"] == "sitscheck"
    assert resource["host.name"] == "vm"
    assert "host.id" not in resource  # a replay is not this machine
    # metrics: the driver's GPU count, every GPU of the bundle's inventory as hw.status
    metrics = received_metrics(receiver)
    assert points(metrics["sitscheck.gpu.number"])[0][1] == 2
    status = metrics["hw.status"]
    gpus = {a["hw.id"] for a, _ in points(status)}
    assert gpus == {UUID0, UUID1}
    for gpu in gpus:
        states = {a["hw.state"]: v for a, v in points(status) if a["hw.id"] == gpu}
        assert set(states) == {"ok", "degraded", "failed", "predicted_failure"}
        assert sum(states.values()) <= 1
    from_checks = sum(len(c.metrics) for c in report.checks)
    counted = sum(
        1
        for name, metric in metrics.items()
        if not name.startswith(("sitscheck.run.", "sitscheck.check.", "sitscheck.otlp."))
        and name not in ("sitscheck.findings", "hw.status")
        for _ in points(metric)
    )
    assert counted == from_checks


@pytest.mark.parametrize("kind", RECEIVERS, ids=IDS)
def test_sample_run_spans_events_and_metrics_arrive(kind: Any, tmp_path: Path) -> None:
    report = sample_report()
    with kind() as receiver:
        result = export(report, receiver, tmp_path)
    assert result.errors == [] and result.current_delivered
    spans = {s.name: s for s in receiver.recorder.spans()}
    assert spans["check xid"].status.code == 2
    assert spans["check memory_errors"].status.code == 0
    event = attrs(spans["check memory_errors"].events[0].attributes)
    assert event["sitscheck.finding.code"] == "memory_errors.dbe_volatile"
    assert event["hw.id"] == UUID0
    verdict = attrs(spans["sitscheck.run"].events[0].attributes)
    assert verdict["sitscheck.verdict.rule"] == "gpu.ecc_dbe"
    metrics = received_metrics(receiver)
    assert point(metrics["hw.gpu.utilization"], **{"hw.id": UUID1}) == pytest.approx(0.12)
    assert point(metrics["hw.power"], **{"hw.id": UUID0}) == pytest.approx(689.5)
    assert metrics["hw.errors"].sum.is_monotonic
    assert point(metrics["hw.status"], **{"hw.id": UUID0, "hw.state": "failed"}) == 1


@pytest.mark.parametrize("kind", RECEIVERS, ids=IDS)
def test_tls_and_headers(kind: Any, tls: Any, tmp_path: Path) -> None:
    with kind(tls=tls) as receiver:
        assert receiver.endpoint.startswith("https://")
        result = export(
            sample_report(),
            receiver,
            tmp_path / "state",
            certificate=str(tls.cert),
            headers={"authorization": TOKEN, "x-tenant": "gpu-fleet"},
        )
    assert result.errors == [] and result.current_delivered
    received = receiver.recorder.received
    assert sorted(r.kind for r in received) == ["metrics", "traces"]
    for item in received:
        assert item.headers["authorization"] == TOKEN
        assert item.headers["x-tenant"] == "gpu-fleet"
    assert TOKEN not in repr(result) and TOKEN not in result.summary()


@pytest.mark.parametrize("kind", RECEIVERS, ids=IDS)
def test_tls_with_an_untrusted_certificate_fails_and_spools(
    kind: Any, tls: Any, tmp_path: Path
) -> None:
    with kind(tls=tls) as receiver:
        result = export(sample_report(), receiver, tmp_path, headers={"authorization": TOKEN})
    assert receiver.recorder.received == []
    assert not result.current_delivered and result.pending == 2
    assert result.errors
    assert all(TOKEN not in message for message in result.errors)
    assert TOKEN not in result.summary()


def test_a_receiver_error_message_never_carries_the_token(tmp_path: Path) -> None:
    with HttpReceiver() as receiver:
        settings = settings_for(
            f"http://u:{TOKEN.split()[1]}@127.0.0.1:{receiver.port}",
            "http/protobuf",
            headers={"authorization": TOKEN},
        )
        receiver.recorder.fail["traces"] = 503
        result = export_report(sample_report(), settings, tmp_path, 5.0)
    assert result.errors
    text = repr(result) + result.summary()
    assert TOKEN not in text and TOKEN.split()[1] not in text


def test_spool_files_are_private(tmp_path: Path) -> None:
    with HttpReceiver() as receiver:
        receiver.recorder.fail.update(traces=503, metrics=503)
        export(sample_report(), receiver, tmp_path)
    files = list((tmp_path / "spool").glob("*.otlp"))
    assert len(files) == 2
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_no_endpoint_is_no_export(tmp_path: Path) -> None:
    from sitscheck.config import OtlpSettings

    result = export_report(sample_report(), OtlpSettings(), tmp_path, 1.0)
    assert not result.enabled and result.summary() == "otlp: off"
    assert not (tmp_path / "spool").exists()


def test_help_and_settings_do_not_import_opentelemetry() -> None:
    code = (
        "import sys\n"
        "import sitscheck.cli, sitscheck.export.otel, sitscheck.export.settings\n"
        "from sitscheck.config import OtlpSettings\n"
        "from sitscheck.export.otel import resolve_settings\n"
        "resolve_settings(OtlpSettings(), 'http://127.0.0.1:4318', {})\n"
        "sys.argv = ['sitscheck', '--help']\n"
        "try:\n"
        "    sitscheck.cli.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('opentelemetry', 'grpc')))\n"
        "print('HEAVY', heavy)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env=env,
        check=False,
    )
    assert "HEAVY []" in done.stdout, done.stdout + done.stderr


def test_collector_config_forwards_traces_and_metrics_from_otlp() -> None:
    import yaml

    config = yaml.safe_load((REPO / "packaging" / "otel" / "collector.yaml").read_text())
    protocols = config["receivers"]["otlp"]["protocols"]
    assert protocols["grpc"]["endpoint"].endswith(":4317")
    assert protocols["http"]["endpoint"].endswith(":4318")
    pipelines = config["service"]["pipelines"]
    for signal in ("traces", "metrics"):
        pipeline = pipelines[signal]
        assert pipeline["receivers"] == ["otlp"]
        assert set(pipeline["exporters"]) <= set(config["exporters"])
        assert set(pipeline["processors"]) <= set(config["processors"])
        assert any(not e.startswith("debug") for e in pipeline["exporters"])


@pytest.mark.parametrize("kind", RECEIVERS, ids=IDS)
def test_a_partial_success_is_delivered_and_its_refusals_reported(
    kind: Any, tmp_path: Path
) -> None:
    with kind() as receiver:
        receiver.recorder.refuse_items["metrics"] = 3
        result = export(sample_report(), receiver, tmp_path)
    assert result.current_delivered and result.pending == 0  # not sent again
    assert result.rejected_items == 3
    assert any("refused 3 item(s): over the cardinality limit" in m for m in result.errors)
