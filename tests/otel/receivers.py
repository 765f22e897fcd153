"""Real OTLP receivers for tests, on 127.0.0.1 only.

- `GrpcReceiver`: a grpc server implementing TraceService and MetricsService from the official
  `opentelemetry-proto` service definitions (`*_pb2_grpc`).
- `HttpReceiver`: an HTTP server taking protobuf POSTs on `/v1/traces` and `/v1/metrics`.
- `BlackHole`: a socket that accepts connections and never answers (a hung endpoint).
- `Http2Tap`: a TCP relay in front of a gRPC receiver that reads the client's HTTP/2 frames and
  records each gRPC message's compressed flag (the server API does not show it).
Both receivers record what they got (parsed request, raw bytes, request headers), can be told
to fail (a gRPC status or an HTTP status, per signal), and take TLS from `make_tls`.
"""

from __future__ import annotations

import datetime
import gzip
import ipaddress
import socket
import ssl
import threading
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.metrics.v1 import (
    metrics_service_pb2,
    metrics_service_pb2_grpc,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

REQUESTS: dict[str, Any] = {
    "traces": trace_service_pb2.ExportTraceServiceRequest,
    "metrics": metrics_service_pb2.ExportMetricsServiceRequest,
}
RESPONSES: dict[str, Any] = {
    "traces": trace_service_pb2.ExportTraceServiceResponse,
    "metrics": metrics_service_pb2.ExportMetricsServiceResponse,
}


@dataclass
class Received:
    kind: str
    message: Any
    raw: bytes  # the protobuf bytes, decompressed
    headers: dict[str, str]
    path: str = ""
    wire: bytes = b""  # the body as it came (compressed or not)


@dataclass
class Recorder:
    """What a receiver got; `fail` maps a kind to a failure it answers instead."""

    received: list[Received] = field(default_factory=list)
    fail: dict[str, Any] = field(default_factory=dict)
    refuse_items: dict[str, int] = field(default_factory=dict)  # partial success answers
    paths: dict[str, str] = field(
        default_factory=lambda: {"/v1/traces": "traces", "/v1/metrics": "metrics"}
    )
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, item: Received) -> None:
        with self.lock:
            self.received.append(item)

    def of(self, kind: str) -> list[Any]:
        with self.lock:
            return [r.message for r in self.received if r.kind == kind]

    def spans(self) -> list[Any]:
        return [
            span
            for request in self.of("traces")
            for rs in request.resource_spans
            for ss in rs.scope_spans
            for span in ss.spans
        ]

    def response(self, kind: str) -> Any:
        """The Export answer: empty, or a partial success refusing `refuse_items[kind]`."""
        answer = RESPONSES[kind]()
        refused = self.refuse_items.get(kind)
        if refused:
            field_name = "rejected_spans" if kind == "traces" else "rejected_data_points"
            setattr(answer.partial_success, field_name, refused)
            answer.partial_success.error_message = "over the cardinality limit"
        return answer

    def metrics(self) -> list[Any]:
        return [
            metric
            for request in self.of("metrics")
            for rm in request.resource_metrics
            for sm in rm.scope_metrics
            for metric in sm.metrics
        ]


@dataclass(frozen=True)
class TlsFiles:
    cert: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.cert, self.key)
        return context


def make_tls(folder: Path) -> TlsFiles:
    """A self-signed certificate for 127.0.0.1 and localhost (needs `cryptography`)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sitscheck-test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    files = TlsFiles(folder / "cert.pem", folder / "key.pem")
    files.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    files.key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return files


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# ---------------------------------------------------------------- gRPC


class _Service:
    def __init__(self, kind: str, recorder: Recorder) -> None:
        self.kind = kind
        self.recorder = recorder

    def Export(self, request: Any, context: grpc.ServicerContext) -> Any:
        failure = self.recorder.fail.get(self.kind)
        if failure is not None:
            context.abort(failure, f"told to fail {self.kind}")
        headers = {k: v for k, v in context.invocation_metadata() if isinstance(v, str)}
        self.recorder.add(Received(self.kind, request, request.SerializeToString(), headers))
        return self.recorder.response(self.kind)


class _Traces(_Service, trace_service_pb2_grpc.TraceServiceServicer):
    pass


class _Metrics(_Service, metrics_service_pb2_grpc.MetricsServiceServicer):
    pass


class GrpcReceiver:
    protocol = "grpc"

    def __init__(self, port: int = 0, tls: TlsFiles | None = None) -> None:
        self.recorder = Recorder()
        self.tls = tls
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
            _Traces("traces", self.recorder), self.server
        )
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(  # type: ignore[no-untyped-call]
            _Metrics("metrics", self.recorder), self.server
        )
        address = f"127.0.0.1:{port}"
        if tls is None:
            self.port = self.server.add_insecure_port(address)
        else:
            credentials = grpc.ssl_server_credentials(
                [(tls.key.read_bytes(), tls.cert.read_bytes())]
            )
            self.port = self.server.add_secure_port(address, credentials)
        assert self.port, f"could not bind {address}"

    @property
    def endpoint(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def __enter__(self) -> GrpcReceiver:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(grace=None).wait(5)


# ---------------------------------------------------------------- HTTP/protobuf


class _Handler(BaseHTTPRequestHandler):
    server: _HttpServer

    def do_POST(self) -> None:
        kind = self.server.recorder.paths.get(self.path)
        length = int(self.headers.get("Content-Length", "0"))
        wire = self.rfile.read(length)
        encoding = self.headers.get("Content-Encoding", "")
        body = gzip.decompress(wire) if encoding == "gzip" else wire
        if kind is None:
            self._answer(404, b"")
            return
        failure = self.server.recorder.fail.get(kind)
        if failure is not None:
            self._answer(int(failure), b"told to fail")
            return
        if self.headers.get("Content-Type") != "application/x-protobuf":
            self._answer(415, b"")
            return
        message = REQUESTS[kind].FromString(body)
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.recorder.add(Received(kind, message, body, headers, self.path, wire))
        self._answer(200, self.server.recorder.response(kind).SerializeToString())

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    recorder: Recorder


class HttpReceiver:
    protocol = "http/protobuf"

    def __init__(self, port: int = 0, tls: TlsFiles | None = None) -> None:
        self.recorder = Recorder()
        self.tls = tls
        self.server = _HttpServer(("127.0.0.1", port), _Handler)
        self.server.recorder = self.recorder
        if tls is not None:
            self.server.socket = tls.server_context().wrap_socket(
                self.server.socket, server_side=True
            )
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    @property
    def endpoint(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def __enter__(self) -> HttpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


class BlackHole:
    """Accepts TCP connections and never answers: a hung collector."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(16)
        self.port = int(self.socket.getsockname()[1])
        self.held: list[socket.socket] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        self.socket.settimeout(0.05)
        while not self.stopped.is_set():
            try:
                conn, _ = self.socket.accept()
                self.held.append(conn)
            except OSError:
                continue

    def __enter__(self) -> BlackHole:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(5)
        for conn in self.held:
            conn.close()
        self.socket.close()


class Http2Tap:
    """A TCP relay to `port` that parses what the client sends as HTTP/2 frames and records,
    for each gRPC message (the 5-byte prefix of a stream's first DATA frame), its compressed
    flag: `flags` lists them in order."""

    PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

    def __init__(self, port: int) -> None:
        self.target = port
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(8)
        self.port = int(self.socket.getsockname()[1])
        self.flags: list[int] = []
        self.stopped = threading.Event()
        self.threads: list[threading.Thread] = []

    def __enter__(self) -> Http2Tap:
        self._spawn(self._accept)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.socket.close()
        for thread in self.threads:
            thread.join(5)

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        self.threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        self.socket.settimeout(0.05)
        while not self.stopped.is_set():
            try:
                client, _ = self.socket.accept()
            except OSError:
                continue
            server = socket.create_connection(("127.0.0.1", self.target))
            self._spawn(self._pump, client, server, True)
            self._spawn(self._pump, server, client, False)

    def _pump(self, source: socket.socket, sink: socket.socket, upstream: bool) -> None:
        buffer = b""
        seen: set[int] = set()
        source.settimeout(0.05)
        while not self.stopped.is_set():
            try:
                chunk = source.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                break
            if not chunk:
                break
            try:
                sink.sendall(chunk)
            except OSError:
                break
            if upstream:
                buffer = self._frames(buffer + chunk, seen)
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _frames(self, buffer: bytes, seen: set[int]) -> bytes:
        if buffer.startswith(self.PREFACE):
            buffer = buffer[len(self.PREFACE) :]
        while len(buffer) >= 9:
            length = int.from_bytes(buffer[:3], "big")
            if len(buffer) < 9 + length:
                break
            kind, stream = buffer[3], int.from_bytes(buffer[5:9], "big") & 0x7FFFFFFF
            payload = buffer[9 : 9 + length]
            if kind == 0 and stream not in seen and payload:  # a stream's first DATA frame
                seen.add(stream)
                self.flags.append(payload[0])
            buffer = buffer[9 + length :]
        return buffer
