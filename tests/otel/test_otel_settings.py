"""Settings: the site file < the OTEL_* environment < --otlp; secrets stay out of messages."""

from __future__ import annotations

import pytest
from otel_samples import TOKEN
from sitscheck.config import OtlpSettings, RunConfig
from sitscheck.errors import ConfigError
from sitscheck.export.settings import resolve_settings, target


def test_nothing_configured_is_no_export() -> None:
    got = resolve_settings(OtlpSettings(), None, {})
    assert got.endpoint is None


def test_the_file_alone() -> None:
    site = OtlpSettings(endpoint="https://otel.example:4318", headers={"X-Token": "abc"})
    got = resolve_settings(site, None, {})
    assert got.endpoint == "https://otel.example:4318"
    assert got.protocol == "http/protobuf"
    assert got.headers == {"x-token": "abc"}


def test_environment_overrides_the_file_field_by_field() -> None:
    site = OtlpSettings(
        endpoint="http://file:4318",
        protocol="http/protobuf",
        certificate="/etc/ca.pem",
        timeout_s=3,
        resource_attributes={"a": "file", "b": "file"},
    )
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4317",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_HEADERS": "Authorization=Bearer%20tok%3D,x-tenant=t1",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
        "OTEL_RESOURCE_ATTRIBUTES": "b=env,deployment.environment.name=prod%20eu",
        "OTEL_SERVICE_NAME": "gpu-health",
    }
    got = resolve_settings(site, None, env)
    assert got.endpoint == "http://env:4317"
    assert got.protocol == "grpc"
    assert got.headers == {"authorization": "Bearer tok=", "x-tenant": "t1"}
    assert got.timeout_s == 2.5  # the variable is in milliseconds
    assert got.certificate == "/etc/ca.pem"  # not overridden: kept
    assert got.resource_attributes == {
        "a": "file",
        "b": "env",
        "deployment.environment.name": "prod eu",
    }
    assert got.service_name == "gpu-health"


def test_command_line_endpoint_wins() -> None:
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318"}
    got = resolve_settings(OtlpSettings(endpoint="http://file:4318"), "http://cli:4318", env)
    assert got.endpoint == "http://cli:4318"


@pytest.mark.parametrize(
    ("endpoint", "protocol"),
    [
        ("http://collector:4317", "grpc"),
        ("collector:4317", "grpc"),
        ("http://collector:4318", "http/protobuf"),
        ("https://otlp.vendor.example/otlp", "http/protobuf"),
    ],
)
def test_protocol_from_the_port_when_unset(endpoint: str, protocol: str) -> None:
    assert resolve_settings(OtlpSettings(), endpoint, {}).protocol == protocol


def test_sdk_disabled_turns_export_off() -> None:
    got = resolve_settings(
        OtlpSettings(endpoint="http://x:4318"), None, {"OTEL_SDK_DISABLED": "true"}
    )
    assert got.endpoint is None


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (OtlpSettings(endpoint="http://x:4318", protocol="http/json"), "http/json"),
        (OtlpSettings(endpoint="ftp://x:21", protocol="http/protobuf"), "scheme"),
        (OtlpSettings(endpoint="x:4318", protocol="http/protobuf"), "http://"),
        (OtlpSettings(endpoint="http://x:notaport"), "port"),
    ],
)
def test_unusable_settings_are_config_errors(settings: OtlpSettings, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        resolve_settings(settings, None, {})


def test_a_bad_header_entry_is_an_error_that_does_not_show_it() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_settings(OtlpSettings(), "http://x:4318", {"OTEL_EXPORTER_OTLP_HEADERS": TOKEN})
    assert TOKEN not in str(caught.value)
    assert "entry 1" in str(caught.value)


def test_bad_timeout() -> None:
    with pytest.raises(ConfigError, match="milliseconds"):
        resolve_settings(OtlpSettings(), "http://x:4318", {"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"})


def test_repr_and_str_never_show_header_values() -> None:
    settings = resolve_settings(
        OtlpSettings(endpoint="https://user:pw@otel.example:4318"),
        None,
        {"OTEL_EXPORTER_OTLP_HEADERS": f"authorization={TOKEN}"},
    )
    assert settings.headers["authorization"] == TOKEN
    config = RunConfig(otlp=settings)
    for text in (repr(settings), str(settings), f"{settings}", repr(config), str(config)):
        assert TOKEN not in text
        assert "pw@" not in text
        assert "authorization" in text  # the name is shown, the value is not


def test_grpc_targets() -> None:
    plain = target(OtlpSettings(endpoint="http://127.0.0.1:4317", protocol="grpc"))
    assert (plain.authority, plain.tls) == ("127.0.0.1:4317", False)
    secure = target(OtlpSettings(endpoint="https://collector", protocol="grpc"))
    assert (secure.authority, secure.tls) == ("collector:4317", True)
    bare = target(OtlpSettings(endpoint="collector:4317", protocol="grpc", insecure=True))
    assert bare.tls is False


def test_http_signal_urls_keep_the_base_path() -> None:
    http = target(OtlpSettings(endpoint="https://otlp.example/base/", protocol="http/protobuf"))
    assert http.signal_url("traces") == "https://otlp.example/base/v1/traces"
    assert http.signal_url("metrics") == "https://otlp.example/base/v1/metrics"
    assert http.tls
