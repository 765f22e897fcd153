"""OTLP settings: the site file, then the standard OTEL_* environment variables, then `--otlp`.

Each environment variable overrides its own field of the site file's `otlp:` block;
`--otlp ENDPOINT` overrides the endpoint. Variables (the OpenTelemetry names and formats):

| variable | field | format |
| --- | --- | --- |
| OTEL_EXPORTER_OTLP_ENDPOINT | endpoint | `http(s)://host:port[/base]` (grpc also `host:port`) |
| OTEL_EXPORTER_OTLP_PROTOCOL | protocol | `grpc` or `http/protobuf` |
| OTEL_EXPORTER_OTLP_HEADERS | headers | `k1=v1,k2=v2`, values percent-encoded |
| OTEL_EXPORTER_OTLP_CERTIFICATE | certificate | CA bundle (PEM) path |
| OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE / _CLIENT_KEY | client_certificate / client_key | PEM |
| OTEL_EXPORTER_OTLP_TIMEOUT | timeout_s | milliseconds (as the spec says) |
| OTEL_EXPORTER_OTLP_INSECURE | insecure | `true`/`false` |
| OTEL_RESOURCE_ATTRIBUTES | resource_attributes | `k1=v1,k2=v2`, merged over the file's |
| OTEL_SERVICE_NAME | service_name | |
| OTEL_SDK_DISABLED | (endpoint cleared) | `true` turns export off |

No protocol given: `grpc` when the endpoint's port is 4317 (the OTLP/gRPC port), otherwise
`http/protobuf` (the specification's default). Header values are secrets: nothing here puts
them in a message; `OtlpSettings`'s repr shows their names only.

No OpenTelemetry import here: the CLI may resolve settings without paying for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from ..config import OtlpSettings
from ..errors import ConfigError

GRPC = "grpc"
HTTP_PROTOBUF = "http/protobuf"
PROTOCOLS = (GRPC, HTTP_PROTOBUF)
GRPC_PORT = 4317
HTTP_PORT = 4318
DEFAULT_TIMEOUT_S = 10.0

ENV_PREFIX = "OTEL_EXPORTER_OTLP_"


def resolve_settings(
    config_otlp: OtlpSettings, cli_endpoint: str | None, environ: Mapping[str, str]
) -> OtlpSettings:
    """The settings a run exports with: file < environment < command line, validated.

    Raises `ConfigError` (never showing a header value) for a protocol or endpoint that
    cannot be used.
    """
    fields: dict[str, Any] = config_otlp.model_dump()

    def env(name: str) -> str | None:
        value = environ.get(name)
        return value.strip() if value is not None and value.strip() else None

    if (value := env(ENV_PREFIX + "ENDPOINT")) is not None:
        fields["endpoint"] = value
    if (value := env(ENV_PREFIX + "PROTOCOL")) is not None:
        fields["protocol"] = value
    if (value := env(ENV_PREFIX + "HEADERS")) is not None:
        fields["headers"] = parse_pairs(value, "OTEL_EXPORTER_OTLP_HEADERS", secret=True)
    for suffix, field in (
        ("CERTIFICATE", "certificate"),
        ("CLIENT_CERTIFICATE", "client_certificate"),
        ("CLIENT_KEY", "client_key"),
    ):
        if (value := env(ENV_PREFIX + suffix)) is not None:
            fields[field] = value
    if (value := env(ENV_PREFIX + "TIMEOUT")) is not None:
        fields["timeout_s"] = _timeout_ms(value)
    if (value := env(ENV_PREFIX + "INSECURE")) is not None:
        fields["insecure"] = value.lower() == "true"
    if (value := env("OTEL_RESOURCE_ATTRIBUTES")) is not None:
        fields["resource_attributes"] = {
            **fields["resource_attributes"],
            **parse_pairs(value, "OTEL_RESOURCE_ATTRIBUTES", secret=False),
        }
    if (value := env("OTEL_SERVICE_NAME")) is not None:
        fields["service_name"] = value
    if cli_endpoint is not None and cli_endpoint.strip():
        fields["endpoint"] = cli_endpoint.strip()
    if (env("OTEL_SDK_DISABLED") or "").lower() == "true":
        fields["endpoint"] = None

    endpoint = fields["endpoint"]
    if endpoint is not None:
        fields["protocol"] = _protocol(fields["protocol"], endpoint)
        target(OtlpSettings.model_construct(**fields))  # refuse an unusable endpoint up front
    elif fields["protocol"] is not None:
        fields["protocol"] = _normalise_protocol(fields["protocol"])
    fields["headers"] = {key.strip().lower(): value for key, value in fields["headers"].items()}
    try:
        return OtlpSettings(**fields)
    except ValueError as exc:  # pydantic's ValidationError; its text never holds header values
        raise ConfigError(f"otlp settings: {_field_errors(exc)}") from None


def parse_pairs(text: str, source: str, *, secret: bool) -> dict[str, str]:
    """`k1=v1,k2=v2` with percent-encoded values (the OTel format); a bad entry is an error."""
    pairs: dict[str, str] = {}
    for index, item in enumerate(text.split(","), start=1):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = unquote(key.strip())
        if not sep or not key:
            shown = f"entry {index}" if secret else repr(item.strip())
            raise ConfigError(f"{source}: {shown} is not KEY=VALUE")
        pairs[key] = unquote(value.strip())
    return pairs


@dataclass(frozen=True)
class Target:
    """Where a payload goes: `url` for http/protobuf, `authority` (host:port) for grpc."""

    protocol: str
    url: str
    authority: str
    tls: bool

    def signal_url(self, kind: str) -> str:
        """http/protobuf: `/v1/traces` or `/v1/metrics` under the endpoint's path."""
        return f"{self.url.rstrip('/')}/v1/{kind}"


def target(settings: OtlpSettings) -> Target:
    """The endpoint parsed for its protocol; `ConfigError` for one that cannot be used."""
    endpoint = (settings.endpoint or "").strip()
    protocol = settings.protocol or _protocol(None, endpoint)
    shown = redact_url(endpoint)
    has_scheme = "://" in endpoint
    parts = urlsplit(endpoint if has_scheme else f"//{endpoint}")
    try:
        port = parts.port
    except ValueError:
        raise ConfigError(f"otlp endpoint {shown!r}: bad port") from None
    host = parts.hostname
    if not host:
        raise ConfigError(f"otlp endpoint {shown!r}: expected http(s)://host:port")
    if has_scheme and parts.scheme not in ("http", "https"):
        raise ConfigError(f"otlp endpoint {shown!r}: scheme must be http or https")
    host_part = f"[{host}]" if ":" in host else host
    if protocol == GRPC:
        tls = parts.scheme == "https" if has_scheme else not settings.insecure
        return Target(GRPC, endpoint, f"{host_part}:{port or GRPC_PORT}", tls)
    if not has_scheme:
        raise ConfigError(f"otlp endpoint {shown!r}: http/protobuf needs http:// or https://")
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


def timeout_s(settings: OtlpSettings) -> float:
    return settings.timeout_s if settings.timeout_s is not None else DEFAULT_TIMEOUT_S


def _protocol(value: str | None, endpoint: str) -> str:
    if value is not None:
        return _normalise_protocol(value)
    parts = urlsplit(endpoint if "://" in endpoint else f"//{endpoint}")
    try:
        port = parts.port
    except ValueError:
        port = None
    return GRPC if port == GRPC_PORT else HTTP_PROTOBUF


def _normalise_protocol(value: str) -> str:
    cleaned = value.strip().lower()
    if cleaned == "http":
        cleaned = HTTP_PROTOBUF
    if cleaned not in PROTOCOLS:
        hint = " (http/json is not supported)" if cleaned == "http/json" else ""
        raise ConfigError(f"otlp protocol {value!r}: expected grpc or http/protobuf{hint}")
    return cleaned


def _timeout_ms(value: str) -> float:
    try:
        millis = float(value)
    except ValueError:
        raise ConfigError(f"OTEL_EXPORTER_OTLP_TIMEOUT {value!r}: expected milliseconds") from None
    if millis <= 0:
        raise ConfigError(f"OTEL_EXPORTER_OTLP_TIMEOUT {value!r}: must be positive")
    return millis / 1000.0


def _field_errors(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return "invalid"
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
        for err in errors(include_input=False)
    )
