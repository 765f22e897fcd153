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
`OTEL_SDK_DISABLED=true` (no export), `OTEL_TRACES_EXPORTER` / `OTEL_METRICS_EXPORTER`
(`otlp`, the default, or `none`: that signal is not sent). A signal with no endpoint at all
is not exported.

A malformed setting never stops the run (the specification: "generate a warning and
gracefully ignore the setting"): an OTEL_* variable or a key of the file's `otlp:` that
cannot be used is treated as unset, so the next source (the generic variable, the file, the
default) applies, with one warning line naming it; a bad entry of a `k=v` list is left out
(as the Python SDK does for `OTEL_RESOURCE_ATTRIBUTES` and the header lists); a boolean
other than `true`/`false` is false, with a warning. A health check must not be switched off
by a telemetry typo inherited from a job's environment. `--otlp` alone is strict: a user
typed it on this command line, so a malformed one is a `ConfigError` (exit 3 before anything
runs, as for any other bad option).

Header names and values are checked here (a value holding a newline or another control
character, say from a YAML block scalar or `%0A`, is left out); header values are secrets:
no message here shows one, and `OtlpSettings`'s repr shows their names only.

No OpenTelemetry import here: the CLI may resolve settings without paying for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TypeVar
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
FILE_SOURCE = "config otlp"  # how a warning names a key of the site file's `otlp:`

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

    def destination(self, kind: str) -> str:
        """Where a payload of `kind` is delivered, as the spool keys it: the signal's URL
        (http/protobuf; never a user:password, never a header), or the gRPC authority with
        TLS or not and the signal."""
        if self.protocol == GRPC:
            return f"grpc{'s' if self.tls else ''}://{self.authority}/{kind}"
        return self.url


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
    warnings: list[str] = field(default_factory=list)  # settings ignored, one line each

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
    """The settings a run exports with: file < environment < command line.

    A malformed OTEL_* variable or `otlp:` key of the site file is ignored (treated as unset;
    a bad entry of a list is left out) with one line in `warnings`, as the specification
    asks: telemetry settings never stop the health check. Only a malformed `--otlp`, which a
    user typed on this command line, raises `ConfigError`. No message shows a header value.
    """
    read = _Reader(environ)
    for message in config_otlp.ignored:
        read.warn(message)
    signals: dict[str, SignalSettings] = {}
    if not read.boolean("OTEL_SDK_DISABLED"):
        for kind in SIGNALS:
            if read.exporter_on(kind):
                resolved = _signal_settings(kind, config_otlp, cli_endpoint, read)
                if resolved is not None:
                    signals[kind] = resolved
    attributes = dict(config_otlp.resource_attributes)
    if (value := read.env("OTEL_RESOURCE_ATTRIBUTES")) is not None:
        attributes.update(parse_pairs(value, "OTEL_RESOURCE_ATTRIBUTES", read.warn, secret=False))
    return ExportSettings(
        signals=signals,
        service_name=read.env("OTEL_SERVICE_NAME") or config_otlp.service_name,
        resource_attributes=attributes,
        spool_max_files=config_otlp.spool_max_files,
        spool_max_bytes=config_otlp.spool_max_bytes,
        spool_max_age_s=config_otlp.spool_max_age_s,
        warnings=list(read.warnings),
    )


def as_export_settings(settings: OtlpSettings | ExportSettings) -> ExportSettings:
    """Settings a file (or a test) gave as one `OtlpSettings`, with no environment."""
    if isinstance(settings, ExportSettings):
        return settings
    return resolve_settings(settings, None, {})


_T = TypeVar("_T")
Source = tuple[str, str]  # (value, where it came from: a variable's name, `config otlp.key`)


class _Reader:
    """The environment read as the specification says (empty is unset), each problem with a
    setting kept once in `warnings` (a generic variable is read for both signals)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.warnings: dict[str, None] = {}

    def warn(self, message: str) -> None:
        self.warnings.setdefault(f"{message}; ignored")

    def env(self, name: str) -> str | None:
        value = self.environ.get(name)
        return value.strip() if value is not None and value.strip() else None

    def sources(self, kind: str, suffix: str, file_value: str | None = None) -> list[Source]:
        """A field's values, first wins: the signal's variable, the generic one, the file's
        (its key is the suffix in lower case)."""
        found = []
        for name in (f"{ENV_PREFIX}{kind.upper()}_{suffix}", ENV_PREFIX + suffix):
            if (value := self.env(name)) is not None:
                found.append((value, name))
        if file_value is not None and file_value.strip():
            found.append((file_value.strip(), f"{FILE_SOURCE}.{suffix.lower()}"))
        return found

    def first(self, sources: list[Source], parse: Callable[[str, str], _T]) -> tuple[_T] | None:
        """What the first source that parses gives; each bad one before it is a warning."""
        for value, source in sources:
            try:
                return (parse(value, source),)
            except ConfigError as exc:
                self.warn(str(exc))
        return None

    def boolean(self, name: str) -> bool:
        """True only for `true` (any case); another value than `false` is false, with a
        warning (the specification's boolean)."""
        value = self.env(name)
        if value is None or value.lower() == "false":
            return False
        if value.lower() == "true":
            return True
        self.warnings.setdefault(f"{name} {value!r}: expected true or false; read as false")
        return False

    def exporter_on(self, kind: str) -> bool:
        """`OTEL_{TRACES,METRICS}_EXPORTER`: `none` sends no such signal; `otlp` (the default)
        does; names of exporters sitscheck does not have are ignored."""
        name = f"OTEL_{kind.upper()}_EXPORTER"
        value = self.env(name)
        if value is None:
            return True
        names = [part.strip().lower() for part in value.split(",") if part.strip()]
        if other := [part for part in names if part not in ("otlp", "none")]:
            shown = ", ".join(repr(part) for part in other)
            self.warn(f"{name}: sitscheck exports over otlp only (or none), not {shown}")
        return "otlp" in names or "none" not in names


def _signal_settings(
    kind: str, file: OtlpSettings, cli_endpoint: str | None, read: _Reader
) -> SignalSettings | None:
    protocol = read.first(read.sources(kind, "PROTOCOL", file.protocol), _normalise_protocol)
    chosen_protocol = protocol[0] if protocol is not None else HTTP_PROTOBUF
    insecure_var = read.sources(kind, "INSECURE")
    insecure = read.boolean(insecure_var[0][1]) if insecure_var else bool(file.insecure)

    def target(endpoint: str, source: str) -> Target:
        where = parse_target(endpoint, chosen_protocol, insecure, source)
        per_signal = source.startswith(f"{ENV_PREFIX}{kind.upper()}_")
        if where.protocol == HTTP_PROTOBUF and not per_signal:
            where = Target(where.protocol, where.signal_url(kind), where.authority, where.tls)
        return where

    if cli_endpoint is not None and cli_endpoint.strip():  # typed here: an error, exit 3
        endpoint, where = cli_endpoint.strip(), target(cli_endpoint.strip(), "--otlp")
    else:
        sources = read.sources(kind, "ENDPOINT", file.endpoint)
        found = read.first(sources, lambda value, source: (value, target(value, source)))
        if found is None:
            return None
        endpoint, where = found[0]
    timeout = read.first(read.sources(kind, "TIMEOUT"), _timeout_ms)
    compression = read.first(read.sources(kind, "COMPRESSION", file.compression), _compression)
    return SignalSettings(
        kind=kind,
        endpoint=endpoint,
        target=where,
        headers=_headers(kind, file, read),
        timeout_s=(timeout[0] if timeout else None) or file.timeout_s or DEFAULT_TIMEOUT_S,
        compression=compression[0] if compression else "none",
        certificate=_path(read, kind, "CERTIFICATE") or file.certificate,
        client_certificate=_path(read, kind, "CLIENT_CERTIFICATE") or file.client_certificate,
        client_key=_path(read, kind, "CLIENT_KEY") or file.client_key,
    )


def _path(read: _Reader, kind: str, suffix: str) -> str | None:
    sources = read.sources(kind, suffix)
    return sources[0][0] if sources else None


def _headers(kind: str, file: OtlpSettings, read: _Reader) -> dict[str, str]:
    """The signal's header variable, else the generic one (a list replaces the other, as the
    SDK does), else the file's; a bad entry or header is left out."""
    sources = read.sources(kind, "HEADERS")
    if sources:
        value, source = sources[0]
        headers = parse_pairs(value, source, read.warn, secret=True)
    else:
        headers, source = dict(file.headers), f"{FILE_SOURCE}.headers"
    return check_headers(headers, source, read.warn)


def parse_pairs(
    text: str, source: str, warn: Callable[[str], None], *, secret: bool
) -> dict[str, str]:
    """`k1=v1,k2=v2` with percent-encoded values (the OTel format); a bad entry is left out
    with a warning (as the SDK's parsers do). Names are lower-cased when `secret` (headers,
    as the SDK does), and a secret entry is shown by its place only."""
    pairs: dict[str, str] = {}
    for index, item in enumerate(text.split(","), start=1):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = unquote(key.strip())
        if not sep or not key:
            shown = f"entry {index}" if secret else repr(item.strip())
            warn(f"{source}: {shown} is not KEY=VALUE")
            continue
        pairs[key.lower() if secret else key] = unquote(value.strip())
    return pairs


def check_headers(
    headers: Mapping[str, str], source: str, warn: Callable[[str], None]
) -> dict[str, str]:
    """Header names lower-cased and checked; values checked for what HTTP and gRPC metadata
    cannot carry (control characters: a trailing newline from a YAML block scalar, `%0A`).
    A bad header is left out with a warning naming it, never its value."""
    checked: dict[str, str] = {}
    for raw_name, value in headers.items():
        name = str(raw_name).strip().lower()
        if not _HEADER_NAME.fullmatch(name):
            warn(f"{source}: header name {name!r} is not a valid HTTP header name")
        elif _CONTROL.search(value):
            warn(
                f"{source}: header {name!r}: its value holds a newline or another control "
                "character (a YAML block scalar or %0A?); value not shown"
            )
        else:
            checked[name] = value.strip()
    return checked


def parse_target(endpoint: str, protocol: str, insecure: bool, source: str) -> Target:
    """The endpoint parsed for its protocol; `ConfigError` for one that cannot be used."""
    shown = redact_url(endpoint)
    has_scheme = "://" in endpoint
    try:
        parts = urlsplit(endpoint if has_scheme else f"//{endpoint}")
    except ValueError as exc:  # an unbalanced [ or ]
        raise ConfigError(f"{source} {shown!r}: {exc}") from None
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
