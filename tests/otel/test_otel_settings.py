"""Settings: the site file < the OTEL_* environment (per signal, as the SDK reads it) < --otlp;
secrets stay out of messages."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from otel_samples import TOKEN
from sitscheck.config import OtlpSettings, RunConfig
from sitscheck.errors import ConfigError
from sitscheck.export.settings import ExportSettings, parse_target, resolve_settings
from sitscheck.site_config import build_config


def urls(got: ExportSettings) -> dict[str, str]:
    return {kind: signal.target.url for kind, signal in got.signals.items()}


def test_nothing_configured_is_no_export() -> None:
    got = resolve_settings(OtlpSettings(), None, {})
    assert got.endpoint is None and got.signals == {}


def test_the_file_alone() -> None:
    site = OtlpSettings(endpoint="https://otel.example:4318", headers={"X-Token": "abc"})
    got = resolve_settings(site, None, {})
    assert got.endpoint == "https://otel.example:4318"
    assert got.protocol == "http/protobuf"
    for signal in got.signals.values():
        assert signal.headers == {"x-token": "abc"}
    assert urls(got) == {
        "traces": "https://otel.example:4318/v1/traces",
        "metrics": "https://otel.example:4318/v1/metrics",
    }


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
    for signal in got.signals.values():
        assert signal.headers == {"authorization": "Bearer tok=", "x-tenant": "t1"}
        assert signal.timeout_s == 2.5  # the variable is in milliseconds
        assert signal.certificate == "/etc/ca.pem"  # not overridden: kept
        assert signal.target.authority == "env:4317"
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
    "endpoint",
    ["http://collector:4317", "http://collector:4318", "https://otlp.vendor.example/otlp"],
)
def test_the_default_protocol_is_http_protobuf_whatever_the_port(endpoint: str) -> None:
    # the specification's default; port 4317 does not make it grpc
    assert resolve_settings(OtlpSettings(), endpoint, {}).protocol == "http/protobuf"


def test_grpc_only_when_the_protocol_says_so() -> None:
    env = {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    got = resolve_settings(OtlpSettings(), "collector:4317", env)
    assert got.protocol == "grpc"
    assert {s.target.authority for s in got.signals.values()} == {"collector:4317"}


def test_per_signal_endpoints_alone_are_used_as_they_are() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces.example:4318/custom/t",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://metrics.example:9090/api/v1/otlp/v1/metrics",
    }
    got = resolve_settings(OtlpSettings(), None, env)
    assert urls(got) == {
        "traces": "http://traces.example:4318/custom/t",
        "metrics": "http://metrics.example:9090/api/v1/otlp/v1/metrics",
    }


def test_a_per_signal_endpoint_beats_the_generic_one_for_its_signal_only() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://all.example:4318/base/",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m.example:4318/v1/metrics",
    }
    got = resolve_settings(OtlpSettings(), None, env)
    assert urls(got) == {
        "traces": "http://all.example:4318/base/v1/traces",
        "metrics": "http://m.example:4318/v1/metrics",
    }


def test_one_per_signal_endpoint_exports_that_signal_only() -> None:
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t.example:4318/v1/traces"}
    assert set(resolve_settings(OtlpSettings(), None, env).signals) == {"traces"}


def test_per_signal_headers_timeout_compression_and_protocol() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://all.example:4318",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-tenant=all,x-common=1",
        "OTEL_EXPORTER_OTLP_METRICS_HEADERS": "x-tenant=metrics",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
        "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "4000",
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "1500",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": "/etc/t-ca.pem",
    }
    got = resolve_settings(OtlpSettings(), None, env)
    traces, metrics = got.signals["traces"], got.signals["metrics"]
    # a per-signal list replaces the generic one (as the SDK does), it is not merged
    assert traces.headers == {"x-tenant": "all", "x-common": "1"}
    assert metrics.headers == {"x-tenant": "metrics"}
    assert (traces.compression, metrics.compression) == ("none", "gzip")
    assert (traces.timeout_s, metrics.timeout_s) == (1.5, 4.0)
    assert (traces.target.protocol, metrics.target.protocol) == ("grpc", "http/protobuf")
    assert traces.target.authority == "all.example:4318"
    assert (traces.certificate, metrics.certificate) == ("/etc/t-ca.pem", None)


def test_the_command_line_endpoint_wins_over_per_signal_ones() -> None:
    env = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t.example:4318/x"}
    got = resolve_settings(OtlpSettings(), "http://cli:4318", env)
    assert urls(got) == {
        "traces": "http://cli:4318/v1/traces",
        "metrics": "http://cli:4318/v1/metrics",
    }


@pytest.mark.parametrize("value", ["brotli", "zstd", "yes"])
def test_an_unknown_compression_is_a_warning_and_the_next_source_applies(value: str) -> None:
    env = {
        "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION": value,
        "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
    }
    got = resolve_settings(OtlpSettings(), "http://x:4318", env)
    assert got.signals["metrics"].compression == "gzip"  # as if the bad variable were unset
    assert got.signals["traces"].compression == "gzip"
    (warning,) = got.warnings
    assert warning.startswith("OTEL_EXPORTER_OTLP_METRICS_COMPRESSION") and "ignored" in warning


def test_each_bad_setting_is_one_warning_and_everything_else_is_used() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318",
        "OTEL_RESOURCE_ATTRIBUTES": "a=b,broken,c=d",
        "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd",  # read for both signals: one warning
        "OTEL_EXPORTER_OTLP_TIMEOUT": "soon",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-good=1,nonsense",
        "OTEL_SDK_DISABLED": "yes",  # a boolean: false, with a warning
    }
    got = resolve_settings(OtlpSettings(timeout_s=3), None, env)
    assert got.resource_attributes == {"a": "b", "c": "d"}
    assert set(got.signals) == {"traces", "metrics"}
    for signal in got.signals.values():
        assert signal.compression == "none" and signal.timeout_s == 3.0
        assert signal.target.protocol == "http/protobuf" and signal.headers == {"x-good": "1"}
    named = [w.split(maxsplit=1)[0].rstrip(":") for w in got.warnings]
    assert sorted(named) == sorted(k for k in env if k != "OTEL_EXPORTER_OTLP_ENDPOINT")


def test_an_endpoint_without_a_scheme_is_ignored_for_the_next_one() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "127.0.0.1:4318/v1/traces",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://all.example:4318",
    }
    got = resolve_settings(OtlpSettings(), None, env)
    assert urls(got) == {
        "traces": "http://all.example:4318/v1/traces",
        "metrics": "http://all.example:4318/v1/metrics",
    }
    (warning,) = got.warnings
    assert "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" in warning and "http://" in warning
    alone = resolve_settings(OtlpSettings(), None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "x:4318"})
    assert alone.signals == {} and len(alone.warnings) == 1


def test_a_bad_command_line_endpoint_is_still_an_error() -> None:
    with pytest.raises(ConfigError, match="--otlp"):
        resolve_settings(OtlpSettings(endpoint="http://file:4318"), "collector:4318", {})


@pytest.mark.parametrize(
    ("value", "exported"),
    [("none", False), ("otlp", True), ("OTLP", True), ("console", True), ("none,otlp", True)],
)
def test_a_signals_exporter_variable(value: str, exported: bool) -> None:
    got = resolve_settings(OtlpSettings(), "http://x:4318", {"OTEL_TRACES_EXPORTER": value})
    assert ("traces" in got.signals) is exported
    assert "metrics" in got.signals
    assert bool(got.warnings) is (value == "console")


@pytest.mark.parametrize(
    "header",
    [f"authorization={TOKEN}%0A", f"authorization={TOKEN}%0D%0A", f"authorization={TOKEN}%00"],
)
def test_a_header_value_with_a_control_character_is_left_out_unshown(header: str) -> None:
    env = {"OTEL_EXPORTER_OTLP_HEADERS": f"{header},x-tenant=t1"}
    got = resolve_settings(OtlpSettings(), "http://x:4318", env)
    assert got.signals["traces"].headers == {"x-tenant": "t1"}
    (message,) = got.warnings
    assert "authorization" in message and "OTEL_EXPORTER_OTLP_HEADERS" in message
    assert TOKEN not in message and TOKEN.split()[1] not in message


def test_a_file_header_from_a_yaml_block_scalar_is_left_out_unshown() -> None:
    import yaml

    text = f"otlp:\n  headers:\n    authorization: |\n      {TOKEN}\n"
    headers = yaml.safe_load(text)["otlp"]["headers"]
    assert headers["authorization"].endswith("\n")  # what a block scalar gives
    got = resolve_settings(OtlpSettings(endpoint="http://x:4318", headers=headers), None, {})
    assert got.signals["traces"].headers == {}
    (message,) = got.warnings
    assert "config otlp.headers" in message and TOKEN.split()[1] not in message


def test_a_bad_header_name_is_left_out() -> None:
    env = {"OTEL_EXPORTER_OTLP_HEADERS": "bad name=1,good=2"}
    got = resolve_settings(OtlpSettings(), "http://x:4318", env)
    assert got.signals["traces"].headers == {"good": "2"}
    assert "header name" in got.warnings[0]


def test_sdk_disabled_turns_export_off() -> None:
    got = resolve_settings(
        OtlpSettings(endpoint="http://x:4318"), None, {"OTEL_SDK_DISABLED": "true"}
    )
    assert got.endpoint is None and got.warnings == []


@pytest.mark.parametrize(
    ("settings", "message", "exported"),
    [
        (OtlpSettings(endpoint="http://x:4318", protocol="http/json"), "http/json", True),
        (OtlpSettings(endpoint="ftp://x:21", protocol="http/protobuf"), "scheme", False),
        (OtlpSettings(endpoint="x:4318", protocol="http/protobuf"), "http://", False),
        (OtlpSettings(endpoint="http://x:notaport"), "port", False),
        (OtlpSettings(endpoint="http://x:4318", compression="zstd"), "gzip", True),
    ],
)
def test_unusable_file_settings_are_warnings(
    settings: OtlpSettings, message: str, exported: bool
) -> None:
    got = resolve_settings(settings, None, {})
    (warning,) = got.warnings
    assert message in warning and warning.startswith("config otlp.")
    assert bool(got.signals) is exported


def test_a_bad_header_entry_is_left_out_without_showing_it() -> None:
    env = {"OTEL_EXPORTER_OTLP_HEADERS": f"{TOKEN},x-tenant=t1"}
    got = resolve_settings(OtlpSettings(), "http://x:4318", env)
    assert got.signals["traces"].headers == {"x-tenant": "t1"}
    (warning,) = got.warnings
    assert TOKEN not in warning and "entry 1" in warning


def test_bad_timeout() -> None:
    env = {"OTEL_EXPORTER_OTLP_TIMEOUT": "soon"}
    got = resolve_settings(OtlpSettings(), "http://x:4318", env)
    assert got.signals["traces"].timeout_s == 10.0
    assert "milliseconds" in got.warnings[0]


def test_a_site_file_with_compression_and_typos_is_read_with_warnings() -> None:
    site = {
        "otlp": {
            "endpoint": "http://x:4318",
            "compression": "gzip",
            "endpiont": "http://typo:4318",
            "timeout_s": -1,
            "headers": {"x-good": "1", "x-number": 5},
            "resource_attributes": {"a": "b", "c": ["not", "a", "string"]},
        }
    }
    config = build_config(site, {}, "config.yaml")
    got = resolve_settings(config.otlp, None, {})
    assert {s.compression for s in got.signals.values()} == {"gzip"}
    assert got.signals["traces"].headers == {"x-good": "1"}
    assert got.signals["traces"].timeout_s == 10.0
    assert got.resource_attributes == {"a": "b"}
    assert [w.split(":")[0] for w in got.warnings] == [
        "config otlp.endpiont",
        "config otlp.timeout_s",
        "config otlp.headers.x-number",
        "config otlp.resource_attributes.c",
    ]
    odd = build_config({"otlp": "http://x:4318"}, {}, "config.yaml").otlp
    assert odd.endpoint is None and len(odd.ignored) == 1


def test_repr_and_str_never_show_header_values() -> None:
    settings = resolve_settings(
        OtlpSettings(endpoint="https://user:pw@otel.example:4318"),
        None,
        {"OTEL_EXPORTER_OTLP_HEADERS": f"authorization={TOKEN}"},
    )
    signal = settings.signals["traces"]
    assert signal.headers["authorization"] == TOKEN
    config = RunConfig(otlp=OtlpSettings(headers=signal.headers))
    for text in (repr(settings), str(settings), repr(signal), repr(config), str(config)):
        assert TOKEN not in text
        assert "pw@" not in text
        assert "authorization" in text  # the name is shown, the value is not


def test_grpc_targets() -> None:
    plain = parse_target("http://127.0.0.1:4317", "grpc", False, "x")
    assert (plain.authority, plain.tls) == ("127.0.0.1:4317", False)
    secure = parse_target("https://collector", "grpc", False, "x")
    assert (secure.authority, secure.tls) == ("collector:4317", True)
    bare = parse_target("collector:4317", "grpc", True, "x")
    assert bare.tls is False
    assert parse_target("collector:4317", "grpc", False, "x").tls is True


def test_http_signal_urls_keep_the_base_path() -> None:
    got = resolve_settings(OtlpSettings(endpoint="https://otlp.example/base/"), None, {})
    assert urls(got) == {
        "traces": "https://otlp.example/base/v1/traces",
        "metrics": "https://otlp.example/base/v1/metrics",
    }
    assert all(s.target.tls for s in got.signals.values())


@pytest.mark.parametrize(
    "text",
    [
        f'otlp:\n  headers:\n    authorization: "{TOKEN}\n    x: y\n',
        f"otlp:\n  headers:\n    authorization: {TOKEN}: x\n",
    ],
)
def test_a_yaml_error_on_the_header_line_does_not_print_the_line(text: str, tmp_path: Path) -> None:
    from sitscheck.site_config import load_site_config

    site = tmp_path / "config.yaml"
    site.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_site_config(site)
    message = str(caught.value)
    assert str(site) in message and "not valid YAML" in message
    assert TOKEN.split()[1] not in message


_SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
_KEYS = st.sampled_from([*OtlpSettings.__struct_fields__, "endpiont", "zstd"]) | st.text(max_size=8)


@given(
    section=_VALUES | st.dictionaries(_KEYS, _VALUES, max_size=6),
    env=st.dictionaries(
        st.sampled_from(
            [
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "OTEL_EXPORTER_OTLP_PROTOCOL",
                "OTEL_EXPORTER_OTLP_HEADERS",
                "OTEL_EXPORTER_OTLP_COMPRESSION",
                "OTEL_EXPORTER_OTLP_TIMEOUT",
                "OTEL_EXPORTER_OTLP_INSECURE",
                "OTEL_RESOURCE_ATTRIBUTES",
                "OTEL_SDK_DISABLED",
                "OTEL_TRACES_EXPORTER",
            ]
        ),
        st.text(max_size=24),
    ),
)
@settings(max_examples=300, deadline=None)
@pytest.mark.slow  # property-based: 300 examples
def test_no_otlp_section_or_variable_stops_a_run(section: object, env: dict[str, str]) -> None:
    """Whatever the site file's `otlp:` holds and whatever the OTEL_* variables say, the run's
    settings resolve (warnings at most): only `--otlp` may be a user error."""
    config = build_config({"otlp": section}, {}, "config.yaml")
    got = resolve_settings(config.otlp, None, env)
    assert all("\n" not in warning for warning in got.warnings)
