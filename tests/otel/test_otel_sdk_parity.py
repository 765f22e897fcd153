"""One run through the OpenTelemetry SDK's own OTLP exporters and through sitscheck, to one
real sink on 127.0.0.1, configured by the same OTEL_* variables: the requests must agree
(paths, headers, compression, decoded content).

The SDK's exporters are given the very SDK objects sitscheck builds for the run
(`run_spans`, `run_metrics`, with the spool's count start sitscheck used), so the decoded
requests are compared whole; span and trace ids, random per export, are compared by their
place in the trace. The run is a replay, so neither side adds this machine's host. Headers
that differ by design are the HTTP clients' own (User-Agent: each names itself; Accept*,
Connection: requests' and urllib's defaults).
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from msgspec.structs import replace
from otel_samples import TOKEN, sample_report
from receivers import GrpcReceiver, Http2Tap, HttpReceiver, Received
from sitscheck.config import OtlpSettings
from sitscheck.export.otel import export_report
from sitscheck.export.payload import (
    Extras,
    HostInfo,
    resource_attributes,
    run_metrics,
    run_spans,
)
from sitscheck.export.settings import resolve_settings
from sitscheck.models import Report

pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
pytest.importorskip("opentelemetry.exporter.otlp.proto.grpc")

_OURS = ("user-agent", "content-length", "host", "accept", "accept-encoding", "connection")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    yield monkeypatch


def replay() -> Report:
    return replace(sample_report(), mode="replay", bundle="/srv/bundle")


def run_through_the_sdk(report: Report, protocol: str, state: Path) -> None:
    """The SDK's exporters, configured by the environment alone, export the run."""
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[assignment]
            OTLPMetricExporter,
        )
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[assignment]
            OTLPSpanExporter,
        )
    resource = resource_attributes(report, HostInfo(), None, {})
    spans = OTLPSpanExporter()
    assert spans.export(run_spans(report, resource)).name == "SUCCESS"
    spans.shutdown()
    since = json.loads((state / "spool" / "state.json").read_text())["since"]
    extras = Extras(dropped_since_ns=int(since * 1e9))
    metrics = OTLPMetricExporter()
    assert metrics.export(run_metrics(report, resource, extras)).name == "SUCCESS"
    metrics.shutdown()


def run_through_sitscheck(report: Report, state: Path) -> None:
    settings = resolve_settings(OtlpSettings(), None, os.environ)
    result = export_report(report, settings, state, timeout_s=10.0)
    assert result.errors == [] and result.current_delivered


def _normalised(item: Received) -> Any:
    """The request with ids replaced by their order of appearance."""
    message = type(item.message)()
    message.CopyFrom(item.message)
    if item.kind == "traces":
        ids: dict[bytes, bytes] = {}

        def rename(value: bytes) -> bytes:
            return ids.setdefault(value, len(ids).to_bytes(8, "big")) if value else value

        for rs in message.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    span.trace_id = rename(span.trace_id)
                    span.span_id = rename(span.span_id)
                    span.parent_span_id = rename(span.parent_span_id)
    return message


def _pair(received: list[Received], kind: str) -> tuple[Received, Received]:
    got = [r for r in received if r.kind == kind]
    assert len(got) == 2, f"{kind}: {len(got)} requests"
    return got[1], got[0]  # (the SDK's, ours): sitscheck sends first


def _headers(item: Received) -> dict[str, str]:
    return {k: v for k, v in item.headers.items() if k not in _OURS}


def test_http_per_signal_endpoints_headers_and_gzip_match_the_sdk(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    report = replay()
    with HttpReceiver() as sink:
        sink.recorder.paths = {"/otlp/t": "traces", "/otlp/m": "metrics"}
        base = f"http://127.0.0.1:{sink.port}"
        clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{base}/otlp/t")
        clean_env.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", f"{base}/otlp/m")
        clean_env.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization={TOKEN.replace(' ', '%20')}")
        clean_env.setenv("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "x-tenant=metrics%2Fgpu")
        clean_env.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
        run_through_sitscheck(report, tmp_path)
        run_through_the_sdk(report, "http/protobuf", tmp_path)
    received = sink.recorder.received
    for kind, path in (("traces", "/otlp/t"), ("metrics", "/otlp/m")):
        sdk, ours = _pair(received, kind)
        assert sdk.path == ours.path == path
        assert _headers(sdk) == _headers(ours)
        assert ours.headers["content-encoding"] == "gzip"
        assert gzip.decompress(ours.wire) == ours.raw
        assert ours.headers["content-type"] == "application/x-protobuf"
        assert _normalised(sdk) == _normalised(ours)
    traces_sdk, _ = _pair(received, "traces")
    _, metrics_ours = _pair(received, "metrics")
    assert traces_sdk.headers["authorization"] == TOKEN and "x-tenant" not in traces_sdk.headers
    assert metrics_ours.headers["x-tenant"] == "metrics/gpu"
    assert "authorization" not in metrics_ours.headers  # replaced by the per-signal list


def test_http_generic_endpoint_gets_the_signal_paths_like_the_sdk(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    report = replay()
    with HttpReceiver() as sink:
        sink.recorder.paths = {"/base/v1/traces": "traces", "/base/v1/metrics": "metrics"}
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{sink.port}/base/")
        run_through_sitscheck(report, tmp_path)
        run_through_the_sdk(report, "http/protobuf", tmp_path)
    for kind in ("traces", "metrics"):
        sdk, ours = _pair(sink.recorder.received, kind)
        assert sdk.path == ours.path == f"/base/v1/{kind}"
        assert "content-encoding" not in sdk.headers and "content-encoding" not in ours.headers
        assert _normalised(sdk) == _normalised(ours)


def test_grpc_headers_compression_and_content_match_the_sdk(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    report = replay()
    with GrpcReceiver() as sink, Http2Tap(sink.port) as tap:
        clean_env.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{tap.port}")
        clean_env.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=gpu-fleet")
        clean_env.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
        clean_env.setenv("OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "gzip")
        clean_env.setenv("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION", "gzip")
        run_through_sitscheck(report, tmp_path)
        run_through_the_sdk(report, "grpc", tmp_path)
    received = sink.recorder.received
    for kind in ("traces", "metrics"):
        sdk, ours = _pair(received, kind)
        assert _headers(sdk) == _headers(ours)
        assert ours.headers["x-tenant"] == "gpu-fleet"
        assert _normalised(sdk) == _normalised(ours)
    assert tap.flags == [1, 1, 1, 1]  # every message gzip-compressed, ours and the SDK's


def test_grpc_without_compression_sends_plain_messages(
    clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with GrpcReceiver() as sink, Http2Tap(sink.port) as tap:
        clean_env.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        clean_env.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{tap.port}")
        run_through_sitscheck(sample_report(), tmp_path)
    assert len(sink.recorder.received) == 2
    assert tap.flags == [0, 0]
    assert grpc.Compression.Gzip  # the tap is what sees it: the server API does not
