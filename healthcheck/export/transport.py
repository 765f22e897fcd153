"""Send one serialised OTLP request, as it is, over gRPC or HTTP/protobuf, under a timeout.

The body is the spooled bytes: gRPC gets it through a raw unary call (no re-serialisation),
HTTP as the POST body of the signal's URL (`.../v1/traces`, `.../v1/metrics`, or a per-signal
endpoint as it is). Compression (`gzip`, `deflate`) is applied here, on the wire only, the
way the SDK's exporters do it: HTTP gets `Content-Encoding`, gRPC its message compression.
The outcome says what the caller does with the payload: delivered (delete it), rejected
for good (drop and count it: sending it again cannot succeed), or failed, for this kind of
payload only (keep it, try the other kind) or for the whole endpoint (keep what goes there,
stop sending to it this run).

Header values never appear in an outcome's text: `scrub` takes them out of whatever a
receiver or a library said. Imported only when a run exports (grpc and OpenTelemetry load
here).
"""

from __future__ import annotations

import enum
import gzip
import ssl
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import grpc
from msgspec import Struct
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from .. import __version__
from ..sources.files import read_at_most
from ..threads import CannotStart, start_daemon
from .settings import GRPC, SignalSettings, redact_url

USER_AGENT = f"sitscheck/{__version__}"
_MAX_RESPONSE = 1 << 20
_DETAIL_CHARS = 300


class Outcome(enum.Enum):
    DELIVERED = "delivered"
    REJECTED = "rejected"  # for good: drop the payload
    KIND_FAILED = "kind_failed"  # keep; stop sending this kind this run
    ENDPOINT_DOWN = "endpoint_down"  # keep; stop sending anything this run


class SendResult(Struct, frozen=True):
    """What sending one request came to: outcome, why, and items a partial success refused."""

    outcome: Outcome
    detail: str = ""
    rejected_items: int = 0  # partial success: spans or data points the receiver refused


class Sender(Protocol):
    def send(self, kind: str, body: bytes, timeout_s: float) -> SendResult: ...

    def close(self) -> None: ...


def open_sender(settings: SignalSettings) -> Sender:
    """A sender for one signal's endpoint; `OSError` when a certificate or key file cannot be
    read."""
    if settings.target.protocol == GRPC:
        return GrpcSender(settings)
    return HttpSender(settings)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret (header value) replaced, capped in length."""
    for secret in secrets:
        if len(secret) >= 3:
            text = text.replace(secret, "<redacted>")
    return text[:_DETAIL_CHARS]


def _read(path: str | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


def _response_rejections(kind: str, body: bytes) -> tuple[int, str]:
    """Rejected items and message of a (partial success) response; (0, "") if unreadable."""
    if not body:
        return 0, ""
    try:
        if kind == "traces":
            traces = trace_service_pb2.ExportTraceServiceResponse.FromString(body)
            return traces.partial_success.rejected_spans, traces.partial_success.error_message
        metrics = metrics_service_pb2.ExportMetricsServiceResponse.FromString(body)
        partial = metrics.partial_success
        return partial.rejected_data_points, partial.error_message
    except Exception:  # a receiver's odd answer body is not our failure
        return 0, ""


# ---------------------------------------------------------------- gRPC

_GRPC_METHODS = {  # "/opentelemetry.proto.collector.trace.v1.TraceService/Export", ...
    "traces": trace_service_pb2.DESCRIPTOR.services_by_name["TraceService"],
    "metrics": metrics_service_pb2.DESCRIPTOR.services_by_name["MetricsService"],
}
_GRPC_REJECT = {grpc.StatusCode.INVALID_ARGUMENT}
_GRPC_DOWN = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
}


_GRPC_COMPRESSION = {
    "none": grpc.Compression.NoCompression,
    "gzip": grpc.Compression.Gzip,
    "deflate": grpc.Compression.Deflate,
}


class GrpcSender:
    def __init__(self, settings: SignalSettings) -> None:
        target = self.target = settings.target
        self.metadata = tuple((key.lower(), value) for key, value in settings.headers.items())
        self.secrets = list(settings.headers.values())
        options = [("grpc.primary_user_agent", USER_AGENT), ("grpc.enable_retries", 0)]
        compression = _GRPC_COMPRESSION[settings.compression]
        if target.tls:
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read(settings.certificate),
                private_key=_read(settings.client_key),
                certificate_chain=_read(settings.client_certificate),
            )
            self.channel = grpc.secure_channel(
                target.authority, credentials, options=options, compression=compression
            )
        else:
            self.channel = grpc.insecure_channel(
                target.authority, options=options, compression=compression
            )

    def send(self, kind: str, body: bytes, timeout_s: float) -> SendResult:
        service = _GRPC_METHODS[kind]
        method = service.methods_by_name["Export"]
        # No serializers: the spooled bytes go on the wire as they are.
        call: Any = self.channel.unary_unary(f"/{service.full_name}/{method.name}")
        try:
            answer: bytes = call(body, timeout=timeout_s, metadata=self.metadata)
        except grpc.RpcError as exc:
            code = exc.code() if callable(getattr(exc, "code", None)) else None
            details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
            text = scrub(f"grpc {getattr(code, 'name', code)}: {details}", self.secrets)
            if code in _GRPC_REJECT:
                return SendResult(Outcome.REJECTED, text)
            if code in _GRPC_DOWN:
                return SendResult(Outcome.ENDPOINT_DOWN, text)
            return SendResult(Outcome.KIND_FAILED, text)
        rejected, message = _response_rejections(kind, answer)
        return SendResult(Outcome.DELIVERED, scrub(message, self.secrets), rejected)

    def close(self) -> None:
        self.channel.close()


# ---------------------------------------------------------------- HTTP/protobuf

_HTTP_REJECT = {400, 413}
_HTTP_DOWN = {502, 503, 504}
_WATCHDOG_GRACE_S = 0.1


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect would carry the headers (tokens) elsewhere: never follow one."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def compress(body: bytes, compression: str) -> bytes:
    """The body as the SDK's HTTP exporter compresses it (gzip stream, or zlib for deflate)."""
    if compression == "gzip":
        return gzip.compress(body, mtime=0)
    if compression == "deflate":
        return zlib.compress(body)
    return body


class HttpSender:
    def __init__(self, settings: SignalSettings) -> None:
        target = self.target = settings.target
        self.compression = settings.compression
        self.headers = {
            **settings.headers,
            "Content-Type": "application/x-protobuf",
            "User-Agent": USER_AGENT,
        }
        if self.compression != "none":
            self.headers["Content-Encoding"] = self.compression
        self.secrets = list(settings.headers.values())
        handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
        if target.tls:
            context = ssl.create_default_context(cafile=settings.certificate)
            if settings.client_certificate:
                context.load_cert_chain(settings.client_certificate, settings.client_key)
            handlers.append(urllib.request.HTTPSHandler(context=context))
        self.opener = urllib.request.build_opener(*handlers)

    def send(self, kind: str, body: bytes, timeout_s: float) -> SendResult:
        """POST under `timeout_s` in all: a watchdog also bounds what socket timeouts do not
        (name resolution). A send given up on is reported not sent, so it stays spooled."""
        outcome: list[SendResult] = []
        where = redact_url(self.target.url)
        try:
            worker = start_daemon(
                lambda: outcome.append(self._post(kind, body, timeout_s)),
                name="sitscheck-otlp-http",
            )
        except CannotStart as exc:  # not sent: it stays spooled for the next run
            return SendResult(Outcome.ENDPOINT_DOWN, f"{where}: not sent: {exc}")
        worker.join(timeout_s + _WATCHDOG_GRACE_S)
        if outcome:
            return outcome[0]
        return SendResult(Outcome.ENDPOINT_DOWN, f"{where}: no answer within {timeout_s:.1f}s")

    def _post(self, kind: str, body: bytes, timeout_s: float) -> SendResult:
        url = self.target.url
        data = compress(body, self.compression)
        request = urllib.request.Request(url, data=data, headers=self.headers, method="POST")
        where = redact_url(url)
        try:
            with self.opener.open(request, timeout=timeout_s) as response:
                answer = read_at_most(response, _MAX_RESPONSE)
        except urllib.error.HTTPError as exc:
            exc.close()
            text = scrub(f"HTTP {exc.code} from {where}", self.secrets)
            if exc.code in _HTTP_REJECT:
                return SendResult(Outcome.REJECTED, text)
            if exc.code in _HTTP_DOWN:
                return SendResult(Outcome.ENDPOINT_DOWN, text)
            return SendResult(Outcome.KIND_FAILED, text)
        except OSError as exc:  # URLError, timeouts, refused, TLS failures
            reason = getattr(exc, "reason", None) or exc
            text = scrub(f"{where}: {type(reason).__name__}: {reason}", self.secrets)
            return SendResult(Outcome.ENDPOINT_DOWN, text)
        except Exception as exc:  # http.client's odd failures (bad status line, ...)
            text = scrub(f"{where}: {type(exc).__name__}: {exc}", self.secrets)
            return SendResult(Outcome.ENDPOINT_DOWN, text)
        rejected, message = _response_rejections(kind, answer)
        return SendResult(Outcome.DELIVERED, scrub(message, self.secrets), rejected)

    def close(self) -> None:
        pass
