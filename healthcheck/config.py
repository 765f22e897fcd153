"""Run configuration: command-line options over the site file over defaults.

The site file is `/etc/sitscheck/config.yaml` (or `--config PATH`); its keys are the fields of
`RunConfig`. Thresholds are not here: they live in rule files and profiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
)

from .errors import ConfigError

SITE_DIR = Path("/etc/sitscheck")
SITE_CONFIG = SITE_DIR / "config.yaml"

# A duration a deadline is built from: finite and at most a day, so no timer, sleep or
# deadline sum can overflow (`1e300` or `.inf` is refused here, naming its key).
MAX_SECONDS = 86400.0
Seconds = Annotated[float, Field(gt=0, le=MAX_SECONDS, allow_inf_nan=False)]


class OtlpSettings(BaseModel):
    """Where and how reports go over OTLP (`sitscheck.export`); no endpoint: no export.

    The OTEL_* environment variables and `--otlp` override these (see
    `sitscheck.export.settings.resolve_settings`). Header values are credentials: `repr`/`str`
    show their names only. Read from the site file by `lenient`: a malformed key is left out
    and named in `ignored`, never an error (a telemetry typo must not stop health checking).
    """

    model_config = ConfigDict(extra="forbid")
    _ignored: list[str] = PrivateAttr(default_factory=list)

    endpoint: str | None = None
    protocol: str | None = Field(default=None, description="grpc or http/protobuf")
    headers: dict[str, str] = Field(default_factory=dict)
    compression: str | None = Field(default=None, description="gzip, deflate or none")
    certificate: str | None = Field(
        default=None, description="CA bundle (PEM) to verify the endpoint"
    )
    timeout_s: float | None = Field(
        default=None, gt=0, le=MAX_SECONDS, allow_inf_nan=False, description="per request; 10"
    )
    client_certificate: str | None = Field(default=None, description="PEM, for mutual TLS")
    client_key: str | None = Field(default=None, description="PEM, for mutual TLS")
    insecure: bool | None = Field(
        default=None, description="grpc: no TLS where the endpoint has no scheme"
    )
    service_name: str | None = None
    resource_attributes: dict[str, str] = Field(default_factory=dict)
    spool_max_files: int = Field(default=200, ge=1, description="undelivered payloads kept on disk")
    spool_max_bytes: int = Field(default=64 * 1024 * 1024, ge=1)
    spool_max_age_s: float = Field(default=7 * 24 * 3600.0, gt=0, allow_inf_nan=False)

    @property
    def ignored(self) -> list[str]:
        """The site file's malformed keys, left out: what is wrong with each (no value)."""
        return list(self._ignored)

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
            if key not in cls.model_fields:
                ignored.append(f"{where}: not a setting")
            elif isinstance(item, Mapping) and key in ("headers", "resource_attributes"):
                kept[key] = {}
                for name, entry in item.items():  # a bad entry alone is left out
                    if problem := _problem(cls, {key: {name: entry}}):
                        ignored.append(f"{where}.{_printable(name)}: {problem}")
                    else:
                        kept[key][name] = entry
            elif problem := _problem(cls, {key: item}):
                ignored.append(f"{where}: {problem}")
            else:
                kept[key] = item
        settings = cls.model_validate(kept)
        settings._ignored = ignored
        return settings

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            if name == "headers" and isinstance(value, dict):
                yield name, {key: "<redacted>" for key in value}
            elif name == "endpoint" and isinstance(value, str) and "@" in value:
                scheme, sep, rest = value.rpartition("://")
                yield name, f"{scheme}{sep}<redacted>@{rest.rpartition('@')[2]}"
            else:
                yield name, value


def _problem(model: type[BaseModel], data: dict[str, Any]) -> str | None:
    """What is wrong with `data` for `model`, in pydantic's words (never the value)."""
    try:
        model.model_validate(data)
    except ValidationError as exc:
        return "; ".join(err["msg"] for err in exc.errors())
    return None


def _printable(key: Any) -> str:
    text = str(key)
    return text if text.isprintable() else repr(text)


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    check_timeout_s: Seconds = Field(20.0, description="deadline of each check")
    run_timeout_s: Seconds = Field(45.0, description="deadline of the whole run")
    command_timeout_s: Seconds = 10.0
    nvml_deadline_s: Seconds = 5.0
    sample_seconds: float = Field(3.0, ge=0, le=600, allow_inf_nan=False)
    expect_gpus: int | None = Field(None, ge=0)
    profile: str | None = None
    checks: list[str] = Field(default_factory=list)
    skip: list[str] = Field(default_factory=list)
    rules_dirs: list[Path] = Field(default_factory=list)
    trt_logs: list[str] = Field(default_factory=list)
    trt_probe: bool = Field(
        False, description="build a tiny TensorRT network on each GPU (needs sitscheck[tensorrt])"
    )
    sys_root: str = "/sys"
    state_dir: Path = Path("/var/lib/sitscheck")
    load: bool = False
    bandwidth: bool = Field(
        False, description="measure PCIe, HBM and peer bandwidth (also part of load)"
    )
    daemon: bool = False
    verbose: bool = False
    otlp: OtlpSettings = Field(default_factory=OtlpSettings)
    check_config: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description=(
            "each check's own config section, by check name (validated by the model the check "
            "declares as its `config`)"
        ),
    )

    @field_validator("otlp", mode="wrap")
    @classmethod
    def _otlp_never_fails(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> OtlpSettings:
        return OtlpSettings.lenient(value)  # export settings are warnings, never exit 3


def load_site_config(path: Path | None) -> dict[str, Any]:
    """The site file's settings; {} when the default file is absent. Errors name the file."""
    target = path or SITE_CONFIG
    if not target.exists():
        if path is not None:
            raise ConfigError(f"{target}: no such config file")
        return {}
    import yaml  # only for a site file: a run without one reads YAML after its window began

    from .engine.yaml_lines import check_events, read_capped
    from .errors import RuleError

    try:
        text = read_capped(target).decode("utf-8")
        check_events(target, text)
        data = yaml.safe_load(text)
    except RuleError as exc:
        raise ConfigError(str(exc)) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        # the problem's words only: yaml's full text quotes the line, which may hold a secret
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise ConfigError(f"{target}{line}: not valid YAML: {problem}") from exc
    except OSError as exc:
        raise ConfigError(f"{target}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{target}: not UTF-8 text (byte {exc.start})") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{target}: expected a mapping of settings")
    return data


def build_config(site: dict[str, Any], overrides: dict[str, Any], source: str) -> RunConfig:
    merged = {**site, **{k: v for k, v in overrides.items() if v is not None}}
    try:
        return RunConfig(**merged)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"{source}: {problems}") from exc
