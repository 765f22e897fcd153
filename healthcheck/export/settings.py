"""OTLP settings: the site file, then the standard OTEL_* environment variables, then `--otlp`.

The variables are read the way the OpenTelemetry SDK's own OTLP exporters read them
(opentelemetry-exporter-otlp-proto-{http,grpc}), per signal: for traces,
`OTEL_EXPORTER_OTLP_TRACES_<X>` when set, else `OTEL_EXPORTER_OTLP_<X>`, else the site file's
`otlp:` field; metrics likewise with `_METRICS_`. `--otlp ENDPOINT` is the generic endpoint
and wins over every endpoint variable.

| X | field | format |
| --- | --- | --- |
| ENDPOINT | endpoint | see below |
| PROTOCOL | protocol | `http/protobuf` (the default, as the specification says) or `grpc` |
| HEADERS | headers | `k1=v1,k2=v2`, percent-encoded; a per-signal list replaces the other |
| COMPRESSION | compression | `gzip`, `deflate` or `none` (the default) |
| TIMEOUT | timeout_s | milliseconds, as the specification says (the Python SDK reads s) |
| CERTIFICATE | certificate | CA bundle (PEM) path |
| CLIENT_CERTIFICATE / CLIENT_KEY | client_certificate / client_key | PEM, mutual TLS |
| INSECURE | insecure | grpc, `true`/`false`: no TLS for an endpoint without a scheme |

Endpoints: the generic one (and the file's, and `--otlp`) is `http(s)://host:port[/base]`,
each signal's path appended (`/v1/traces`, `/v1/metrics`); a per-signal one is the signal's
full URL, used as it is; for grpc only its `host:port` counts.

And `OTEL_RESOURCE_ATTRIBUTES` (`k1=v1,...`, merged over the file's), `OTEL_SERVICE_NAME`,
`OTEL_SDK_DISABLED=true` (no export). A signal with no endpoint at all is not exported.

Header names and values are checked here (a value holding a newline or another control
character, say from a YAML block scalar or `%0A`, is refused); header values are secrets:
no message here shows one, and `OtlpSettings`'s repr shows their names only.

No OpenTelemetry import here: the CLI may resolve settings without paying for it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from msgspec import Struct, field

from ..config import OtlpSettings
from ..errors import ConfigError

GRPC = "grpc"
HTTP_PROTOBUF = "http/protobuf"
PROTOCOLS = (GRPC, HTTP_PROTOBUF)
COMPRESSIONS = ("none", "gzip", "deflate")
GRPC_PORT = 4317
HTTP_PORT = 4318
DEFAULT_TIMEOUT_S = 10.0
SIGNALS = ("traces", "metrics")

ENV_PREFIX = "OTEL_EXPORTER_OTLP_"
# RFC 9110 token characters for a header name (what the SDK's parser takes, less upper case)
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class Target(Struct, frozen=True):
    """Where one signal goes: `url` (the full URL) for http/protobuf; `authority` (host:port)
    for grpc."""

    protocol: str
    url: str
    authority: str
    tls: bool

    def signal_url(self, kind: str) -> str:
        """http/protobuf: `/v1/traces` or `/v1/metrics` under a generic endpoint's path."""
        return f"{self.url.rstrip('/')}/v1/{kind}"


class SignalSettings(Struct, frozen=True):
    """How one signal (traces or metrics) is sent."""

    kind: str
    endpoint: str  # as configured (shown redacted)
    target: Target
    headers: dict[str, str]  # secrets: never in the repr (`__repr__`)
    timeout_s: float = DEFAULT_TIMEOUT_S
    compression: str = "none"
    certificate: str | None = None
    client_certificate: str | None = None
    client_key: str | None = None

    def __repr__(self) -> str:  # header values are secrets: names only
        return (
            f"SignalSettings(kind={self.kind!r}, endpoint={redact_url(self.endpoint)!r}, "
            f"protocol={self.target.protocol!r}, headers={sorted(self.headers)!r}, "
            f"timeout_s={self.timeout_s!r}, compression={self.compression!r})"
        )


class ExportSettings(Struct, frozen=True):
    """What a run exports with: one `SignalSettings` per exported signal, and the rest."""

    signals: dict[str, SignalSettings]
    service_name: str | None = None
    resource_attributes: dict[str, str] = field(default_factory=dict)
    spool_max_files: int = 200
    spool_max_bytes: int = 64 * 1024 * 1024
    spool_max_age_s: float = 7 * 24 * 3600.0

    @property
    def endpoint(self) -> str | None:
        """The first signal's endpoint (None: nothing is exported)."""
        return next((s.endpoint for s in self.signals.values()), None)

    @property
    def protocol(self) -> str | None:
        return next((s.target.protocol for s in self.signals.values()), None)

    def secrets(self) -> list[str]:
        return [value for s in self.signals.values() for value in s.headers.values()]


def resolve_settings(
    config_otlp: OtlpSettings, cli_endpoint: str | None, environ: Mapping[str, str]
) -> ExportSettings:
    """The settings a run exports with: file < environment < command line, validated.

    Raises `ConfigError` (never showing a header value) for a protocol, endpoint, header,
    timeout or compression that cannot be used.
    """
    file = config_otlp

    def env(name: str) -> str | None:
        value = environ.get(name)
        return value.strip() if value is not None and value.strip() else None

    disabled = (env("OTEL_SDK_DISABLED") or "").lower() == "true"
    signals: dict[str, SignalSettings] = {}
    for kind in SIGNALS:
        signal = f"{ENV_PREFIX}{kind.upper()}_"

        def pick(suffix: str, _signal: str = signal) -> tuple[str | None, str]:
            """The signal's variable, else the generic one: (value, its name)."""
            for name in (_signal + suffix, ENV_PREFIX + suffix):
                if (value := env(name)) is not None:
                    return value, name
            return None, ""

        resolved = _signal_settings(kind, file, cli_endpoint, pick)
        if resolved is not None and not disabled:
            signals[kind] = resolved
    attributes = dict(file.resource_attributes)
    if (value := env("OTEL_RESOURCE_ATTRIBUTES")) is not None:
        attributes.update(parse_pairs(value, "OTEL_RESOURCE_ATTRIBUTES", secret=False))
    return ExportSettings(
        signals=signals,
        service_name=env("OTEL_SERVICE_NAME") or file.service_name,
        resource_attributes=attributes,
        spool_max_files=file.spool_max_files,
        spool_max_bytes=file.spool_max_bytes,
        spool_max_age_s=file.spool_max_age_s,
    )


def as_export_settings(settings: OtlpSettings | ExportSettings) -> ExportSettings:
    """Settings a file (or a test) gave as one `OtlpSettings`, with no environment."""
    if isinstance(settings, ExportSettings):
        return settings
    return resolve_settings(settings, None, {})


def _signal_settings(
    kind: str,
    file: OtlpSettings,
    cli_endpoint: str | None,
    pick: Any,
) -> SignalSettings | None:
    endpoint_value, endpoint_var = pick("ENDPOINT")
    per_signal = endpoint_var.startswith(f"{ENV_PREFIX}{kind.upper()}_")
    if cli_endpoint is not None and cli_endpoint.strip():
        endpoint, source, per_signal = cli_endpoint.strip(), "--otlp", False
    elif endpoint_value is not None:
        endpoint, source = endpoint_value, endpoint_var
    elif file.endpoint and file.endpoint.strip():
        endpoint, source = file.endpoint.strip(), "otlp.endpoint"
    else:
        return None
    protocol_value, protocol_var = pick("PROTOCOL")
    protocol = _normalise_protocol(
        protocol_value or file.protocol or HTTP_PROTOBUF, protocol_var or "otlp.protocol"
    )
    insecure_value, _ = pick("INSECURE")
    insecure = insecure_value.lower() == "true" if insecure_value is not None else file.insecure
    where = parse_target(endpoint, protocol, bool(insecure), source)
    if protocol == HTTP_PROTOBUF and not per_signal:
        where = Target(where.protocol, where.signal_url(kind), where.authority, where.tls)
    headers_value, headers_var = pick("HEADERS")
    if headers_value is not None:
        headers = parse_pairs(headers_value, headers_var, secret=True)
    else:
        headers = {key: value for key, value in file.headers.items()}
    headers = check_headers(headers, headers_var or "otlp.headers")
    timeout_value, timeout_var = pick("TIMEOUT")
    timeout = _timeout_ms(timeout_value, timeout_var) if timeout_value is not None else None
    compression_value, compression_var = pick("COMPRESSION")
    compression = _compression(compression_value or "none", compression_var)
    certificate, _ = pick("CERTIFICATE")
    client_certificate, _ = pick("CLIENT_CERTIFICATE")
    client_key, _ = pick("CLIENT_KEY")
    return SignalSettings(
        kind=kind,
        endpoint=endpoint,
        target=where,
        headers=headers,
        timeout_s=timeout or file.timeout_s or DEFAULT_TIMEOUT_S,
        compression=compression,
        certificate=certificate or file.certificate,
        client_certificate=client_certificate or file.client_certificate,
        client_key=client_key or file.client_key,
    )


def parse_pairs(text: str, source: str, *, secret: bool) -> dict[str, str]:
    """`k1=v1,k2=v2` with percent-encoded values (the OTel format); a bad entry is an error.

    Names are lower-cased when `secret` (headers, as the SDK does)."""
    pairs: dict[str, str] = {}
    for index, item in enumerate(text.split(","), start=1):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = unquote(key.strip())
        if not sep or not key:
            shown = f"entry {index}" if secret else repr(item.strip())
            raise ConfigError(f"{source}: {shown} is not KEY=VALUE")
        pairs[key.lower() if secret else key] = unquote(value.strip())
    return pairs


def check_headers(headers: Mapping[str, str], source: str) -> dict[str, str]:
    """Header names lower-cased and checked; values checked for what HTTP and gRPC metadata
    cannot carry (control characters: a trailing newline from a YAML block scalar, `%0A`).
    The message names the header, never its value."""
    checked: dict[str, str] = {}
    for raw_name, value in headers.items():
        name = str(raw_name).strip().lower()
        if not _HEADER_NAME.fullmatch(name):
            shown = name if not _CONTROL.search(name) else repr(name)
            raise ConfigError(f"{source}: header name {shown!r} is not a valid HTTP header name")
        if not isinstance(value, str):
            raise ConfigError(f"{source}: header {name!r}: its value must be a string")
        if _CONTROL.search(value):
            raise ConfigError(
                f"{source}: header {name!r}: its value holds a newline or another control "
                "character (a YAML block scalar or %0A?); value not shown"
            )
        checked[name] = value.strip()
    return checked


def parse_target(endpoint: str, protocol: str, insecure: bool, source: str) -> Target:
    """The endpoint parsed for its protocol; `ConfigError` for one that cannot be used."""
    shown = redact_url(endpoint)
    has_scheme = "://" in endpoint
    parts = urlsplit(endpoint if has_scheme else f"//{endpoint}")
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"{source} {shown!r}: bad port") from None
    host = parts.hostname
    if not host:
        raise ConfigError(f"{source} {shown!r}: expected http(s)://host:port")
    if has_scheme and parts.scheme not in ("http", "https"):
        raise ConfigError(f"{source} {shown!r}: scheme must be http or https")
    host_part = f"[{host}]" if ":" in host else host
    if protocol == GRPC:
        tls = parts.scheme == "https" if has_scheme else not insecure
        return Target(GRPC, endpoint, f"{host_part}:{port or GRPC_PORT}", tls)
    if not has_scheme:
        raise ConfigError(f"{source} {shown!r}: http/protobuf needs http:// or https://")
    authority = f"{host_part}:{port}" if port else host_part
    url = f"{parts.scheme}://{authority}{parts.path}"
    return Target(HTTP_PROTOBUF, url, authority, parts.scheme == "https")


def redact_url(url: str) -> str:
    """The URL without user:password, for messages."""
    scheme, sep, rest = url.rpartition("://")
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "<redacted>@" + authority.rpartition("@")[2]
    return f"{scheme}{sep}{authority}{slash}{path}"


def _normalise_protocol(value: str, source: str) -> str:
    cleaned = value.strip().lower()
    if cleaned == "http":
        cleaned = HTTP_PROTOBUF
    if cleaned not in PROTOCOLS:
        hint = " (http/json is not supported)" if cleaned == "http/json" else ""
        raise ConfigError(f"{source} {value!r}: expected grpc or http/protobuf{hint}")
    return cleaned


def _compression(value: str, source: str) -> str:
    cleaned = value.strip().lower()
    if cleaned not in COMPRESSIONS:
        raise ConfigError(f"{source} {value!r}: expected gzip, deflate or none")
    return cleaned


def _timeout_ms(value: str, source: str) -> float:
    try:
        millis = float(value)
    except ValueError:
        raise ConfigError(f"{source} {value!r}: expected milliseconds") from None
    if not 0 < millis < float("inf"):
        raise ConfigError(f"{source} {value!r}: must be a positive number of milliseconds")
    return millis / 1000.0
