"""A spooled payload goes only to the endpoint it was meant for (issue 29, item 8).

A run that could not reach endpoint A spools its payloads; a later run configured for B (with
B's headers) must not hand them to B: they wait for a run that has A again, within the
spool's bounds. Files of the earlier spool format, which name no endpoint, are dropped
unsent. The spool holds no header value and no user:password. Real receivers, real sockets.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from otel_samples import TOKEN, reports, settings_for
from otlp_decode import spans_of
from receivers import GrpcReceiver, HttpReceiver, free_port
from sitscheck.config import OtlpSettings
from sitscheck.export.otel import ExportResult, export_report
from sitscheck.export.settings import resolve_settings
from sitscheck.models import Report

RECEIVERS = [GrpcReceiver, HttpReceiver]
IDS = ["grpc", "http"]


def run(report: Report, endpoint: str, protocol: str, state: Path, **extra: Any) -> ExportResult:
    return export_report(report, settings_for(endpoint, protocol, **extra), state, 1.5)


def trace_ids(receiver: Any) -> list[str]:
    return [spans_of(request)[0].trace_id.hex() for request in receiver.recorder.of("traces")]


@pytest.mark.parametrize("kind", RECEIVERS, ids=IDS)
def test_a_spooled_payload_goes_only_to_the_endpoint_it_was_meant_for(
    kind: Any, tmp_path: Path
) -> None:
    first, second, third = reports(3)
    port_a = free_port()
    a = f"http://127.0.0.1:{port_a}"
    down = run(first, a, kind.protocol, tmp_path, headers={"x-tenant": "a"})
    assert down.pending == 2 and not down.current_delivered
    with kind() as b:
        other = run(second, b.endpoint, kind.protocol, tmp_path, headers={"x-tenant": "b"})
    assert trace_ids(b) == [other.trace_id]  # only its own run: nothing of A's
    assert len(b.recorder.received) == 2
    assert other.current_delivered and other.delivered_earlier == 0
    assert other.pending == 2 and other.waiting == 2
    assert "for another endpoint" in other.summary()
    with kind(port=port_a) as receiver_a:
        back = run(third, a, kind.protocol, tmp_path, headers={"x-tenant": "a"})
    assert trace_ids(receiver_a) == [down.trace_id, back.trace_id]
    assert {r.headers.get("x-tenant") for r in receiver_a.recorder.received} == {"a"}
    assert back.pending == 0 and back.waiting == 0 and back.delivered_earlier == 2
    assert [p.name for p in (tmp_path / "spool").glob("*.destination")] == []


def test_each_signal_keeps_its_own_endpoint(tmp_path: Path) -> None:
    """Traces and metrics of one run meant for one endpoint; the next run sends metrics
    elsewhere: the traces are delivered where they were meant to go, the metrics wait."""
    first, second = reports(2)
    port = free_port()
    run(first, f"http://127.0.0.1:{port}", "http/protobuf", tmp_path)
    with HttpReceiver(port=port) as receiver:
        receiver.recorder.paths = {"/v1/traces": "traces", "/m/v1/metrics": "metrics"}
        env = {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": f"{receiver.endpoint}/m/v1/metrics"}
        settings = resolve_settings(OtlpSettings(endpoint=receiver.endpoint), None, env)
        later = export_report(second, settings, tmp_path, 1.5)
    got = sorted((r.kind, r.path) for r in receiver.recorder.received)
    assert got == [("metrics", "/m/v1/metrics"), ("traces", "/v1/traces"), ("traces", "/v1/traces")]
    assert later.waiting == 1  # the first run's metrics, meant for /v1/metrics


def test_a_waiting_payload_past_the_age_limit_is_dropped_with_its_endpoint_named(
    tmp_path: Path,
) -> None:
    (old,) = reports(1, minutes_ago=120)
    (new,) = reports(1, minutes_ago=1)
    gone = f"http://127.0.0.1:{free_port()}/gone"
    run(old, gone, "http/protobuf", tmp_path)
    with HttpReceiver() as receiver:
        up = run(new, receiver.endpoint, "http/protobuf", tmp_path, spool_max_age_s=3600)
    assert trace_ids(receiver) == [up.trace_id]
    assert up.dropped == 2 and up.waiting == 0 and up.pending == 0
    (note,) = [m for m in up.errors if "dropped" in m]
    assert f"{gone}/v1/traces" in note and f"{gone}/v1/metrics" in note


def test_payloads_of_the_earlier_spool_format_are_dropped_unsent(tmp_path: Path) -> None:
    first, second = reports(2)
    run(first, f"http://127.0.0.1:{free_port()}", "http/protobuf", tmp_path)
    spool = tmp_path / "spool"
    bodies = {path.name.split("-")[1]: path.read_bytes() for path in spool.glob("*.otlp")}
    for path in [*spool.glob("*.otlp"), *spool.glob("*.destination")]:
        path.unlink()
    stamp = (datetime.now(timezone.utc) - timedelta(minutes=10)).strftime("%Y%m%dT%H%M%S.%fZ")
    for kind, body in bodies.items():  # as the earlier version named them: no destination
        (spool / f"{stamp}-{kind}-0123abcd.otlp").write_bytes(body)
    with HttpReceiver() as receiver:
        up = run(second, receiver.endpoint, "http/protobuf", tmp_path)
    assert trace_ids(receiver) == [up.trace_id] and len(receiver.recorder.received) == 2
    assert up.dropped == 2 and up.dropped_total == 2 and up.pending == 0
    assert any("earlier version" in m and "dropped unsent" in m for m in up.errors)
    assert list(spool.glob("*.otlp")) == []


def test_the_spool_holds_no_header_value_and_no_password(tmp_path: Path) -> None:
    (report,) = reports(1)
    endpoint = f"http://user:pa55w0rd@127.0.0.1:{free_port()}/base"
    result = run(report, endpoint, "http/protobuf", tmp_path, headers={"authorization": TOKEN})
    assert result.pending == 2
    written = b"".join(p.read_bytes() for p in (tmp_path / "spool").rglob("*") if p.is_file())
    assert b"pa55w0rd" not in written and TOKEN.encode() not in written
    records = sorted(p.read_text() for p in (tmp_path / "spool").glob("*.destination"))
    port = endpoint.rsplit(":", 1)[1].split("/")[0]
    assert records == [
        f"http://127.0.0.1:{port}/base/v1/metrics",
        f"http://127.0.0.1:{port}/base/v1/traces",
    ]
