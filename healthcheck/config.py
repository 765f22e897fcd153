"""Run configuration: command-line options over the site file over defaults.

The site file is `/etc/sitscheck/config.yaml` (or `--config PATH`); its keys are the fields of
`RunConfig`. Thresholds are not here: they live in rule files and profiles.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

from msgspec import Meta, Struct, field

from .structs import Invalid, convert

SITE_DIR = Path("/etc/sitscheck")
SITE_CONFIG = SITE_DIR / "config.yaml"

# A duration a deadline is built from: finite and at most a day, so no timer, sleep or
# deadline sum can overflow (`1e300`, `.inf` or `.nan` is refused here, naming its key).
MAX_SECONDS = 86400.0
Seconds = Annotated[float, Meta(gt=0, le=MAX_SECONDS)]


class OtlpSettings(Struct, kw_only=True, forbid_unknown_fields=True, dict=True):
    """Where and how reports go over OTLP (`sitscheck.export`); no endpoint: no export.

    The OTEL_* environment variables and `--otlp` override these (see
    `sitscheck.export.settings.resolve_settings`). Header values are credentials: `repr`/`str`
    show their names only. Read from the site file by `lenient`: a malformed key is left out
    and named in `ignored`, never an error (a telemetry typo must not stop health checking).
    """

    endpoint: str | None = None
    protocol: Annotated[str | None, Meta(description="grpc or http/protobuf")] = None
    headers: dict[str, str] = field(default_factory=dict)
    compression: Annotated[str | None, Meta(description="gzip, deflate or none")] = None
    certificate: Annotated[
        str | None, Meta(description="CA bundle (PEM) to verify the endpoint")
    ] = None
    timeout_s: Annotated[Seconds | None, Meta(description="per request; 10")] = None
    client_certificate: Annotated[str | None, Meta(description="PEM, for mutual TLS")] = None
    client_key: Annotated[str | None, Meta(description="PEM, for mutual TLS")] = None
    insecure: Annotated[
        bool | None, Meta(description="grpc: no TLS where the endpoint has no scheme")
    ] = None
    service_name: str | None = None
    resource_attributes: dict[str, str] = field(default_factory=dict)
    spool_max_files: Annotated[int, Meta(ge=1, description="undelivered payloads kept on disk")] = (
        200
    )
    spool_max_bytes: Annotated[int, Meta(ge=1)] = 64 * 1024 * 1024
    spool_max_age_s: Annotated[float, Meta(gt=0)] = 7 * 24 * 3600.0

    def __post_init__(self) -> None:
        if not math.isfinite(self.spool_max_age_s):
            raise ValueError("spool_max_age_s: must be a finite number")

    @property
    def ignored(self) -> list[str]:
        """The site file's malformed keys, left out: what is wrong with each (no value)."""
        return list(vars(self).get("_ignored", ()))

    @classmethod
    def lenient(cls, value: Any) -> OtlpSettings:
        """The site file's `otlp:` section with each key (or header, or attribute) that does
        not validate left out and named in `ignored`."""
        if isinstance(value, OtlpSettings):
            return value
        ignored: list[str] = []
        kept: dict[str, Any] = {}
        if not isinstance(value, Mapping):
            if value is not None:
                ignored.append("config otlp: expected a mapping of settings")
            value = {}
        for key, item in value.items():
            where = f"config otlp.{_printable(key)}"
            if key not in cls.__struct_fields__:
                ignored.append(f"{where}: not a setting")
            elif isinstance(item, Mapping) and key in ("headers", "resource_attributes"):
                kept[key] = {}
                for name, entry in item.items():  # a bad entry alone is left out
                    if problem := _problem({key: {name: entry}}):
                        ignored.append(f"{where}.{_printable(name)}: {problem}")
                    else:
                        kept[key][name] = entry
            elif problem := _problem({key: item}):
                ignored.append(f"{where}: {problem}")
            else:
                kept[key] = item
        settings = convert(kept, cls, strict=False)
        vars(settings)["_ignored"] = ignored
        return settings

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self._shown())
        return f"OtlpSettings({shown})"

    def _shown(self) -> Iterator[tuple[str, Any]]:
        for name in self.__struct_fields__:
            value = getattr(self, name)
            if name == "headers" and isinstance(value, dict):
                yield name, {key: "<redacted>" for key in value}
            elif name == "endpoint" and isinstance(value, str) and "@" in value:
                scheme, sep, rest = value.rpartition("://")
                yield name, f"{scheme}{sep}<redacted>@{rest.rpartition('@')[2]}"
            else:
                yield name, value


def _problem(data: dict[str, Any]) -> str | None:
    """What is wrong with `data` for `OtlpSettings` (never the value)."""
    try:
        convert(data, OtlpSettings, strict=False)
    except Invalid as exc:
        return exc.what
    return None


def _printable(key: Any) -> str:
    text = str(key)
    return text if text.isprintable() else repr(text)


class RunConfig(Struct, kw_only=True, forbid_unknown_fields=True):
    """A run's settings; `run_config` reads them from the site file's keys and the options."""

    check_timeout_s: Annotated[Seconds, Meta(description="deadline of each check")] = 20.0
    run_timeout_s: Annotated[Seconds, Meta(description="deadline of the whole run")] = 45.0
    command_timeout_s: Seconds = 10.0
    nvml_deadline_s: Seconds = 5.0
    sample_seconds: Annotated[float, Meta(ge=0, le=600)] = 3.0
    expect_gpus: Annotated[int, Meta(ge=0)] | None = None
    profile: str | None = None
    checks: list[str] = field(default_factory=list)
    skip: list[str] = field(default_factory=list)
    rules_dirs: list[Path] = field(default_factory=list)
    trt_logs: list[str] = field(default_factory=list)
    trt_probe: Annotated[
        bool,
        Meta(description="build a tiny TensorRT network on each GPU (needs sitscheck[tensorrt])"),
    ] = False
    sys_root: str = "/sys"
    state_dir: Path = Path("/var/lib/sitscheck")
    load: bool = False
    bandwidth: Annotated[
        bool, Meta(description="measure PCIe, HBM and peer bandwidth (also part of load)")
    ] = False
    daemon: bool = False
    verbose: bool = False
    otlp: OtlpSettings = field(default_factory=OtlpSettings)  # `run_config`: never an error
    check_config: Annotated[
        dict[str, dict[str, Any]],
        Meta(
            description="each check's own config section, by check name (validated by the "
            "model the check declares as its `config`)"
        ),
    ] = field(default_factory=dict)


def run_config(data: Mapping[str, Any]) -> RunConfig:
    """`data` (setting -> value) as a RunConfig, every setting checked (`Invalid` names the
    first that is not one or does not fit), a number written as text read as the number.
    `otlp` never fails: export settings are warnings, never exit 3 (`OtlpSettings.lenient`)."""
    given = dict(data)
    otlp = OtlpSettings.lenient(given.pop("otlp", None))
    config = convert(given, RunConfig, strict=False)
    config.otlp = otlp
    return config
