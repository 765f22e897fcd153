"""The report model: what a run found, as scripts and reporters read it.

The JSON report is these models dumped as they are; `schema/report.schema.json` is generated
from them and published. Field names are a contract: add, never rename.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .status import Layer, Severity, Status, worst

__all__ = ["Layer", "Severity", "Status", "worst"]

SCHEMA_VERSION = "1.0"
# `Report.host` of a replayed bundle whose meta.json names no host
NO_HOST = "unknown (no host in the bundle's meta.json)"

# Daemon runs (`run --daemon`, `daemon`): whether a finding or fired verdict is new since the
# last run or was already there; None outside daemon runs.
DaemonMark = Literal["new", "persisting"]
# What an automation may do about a finding or verdict (sitscheck.contract.ActionCategory).
ActionCategoryName = Literal[
    "none", "rerun", "configure", "triage", "reset_gpu", "reboot", "isolate", "replace"
]


class Device(BaseModel):
    """The GPU (or port) a finding concerns."""

    model_config = ConfigDict(frozen=True)

    index: int | None = None
    pci_bus_id: str | None = None
    name: str | None = None
    uuid: str | None = Field(
        default=None, description="The GPU's UUID (GPU-...), from the driver's inventory."
    )


class KnownGpu(BaseModel):
    """A GPU's identity as a run found it. The daemon keeps the last run's (its state), so a GPU
    that stops answering keeps the UUID and model it had (`sitscheck.gpu.resolve`)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    index: int | None = None
    pci_bus_id: str | None = None
    uuid: str | None = None
    name: str | None = None
    pci_device_id: str | None = None


class Evidence(BaseModel):
    """Where a finding came from: the source, the command/path/NVML call, a capped excerpt."""

    model_config = ConfigDict(frozen=True)

    source: str
    ref: str | None = None
    excerpt: str | None = None


class Finding(BaseModel):
    code: str
    severity: Severity
    message: str
    device: Device | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    action: str | None = None
    kind: Literal["condition", "event"] = Field(
        default="condition",
        description=(
            "condition: holds now and clears when it stops holding; event: happened (a log "
            "line), new once. From the code's declaration in its check."
        ),
    )
    action_category: ActionCategoryName | None = Field(
        default=None,
        description="What an automation may do (from the code's declaration), beside `action`.",
    )
    state: DaemonMark | None = Field(
        default=None, description="Daemon runs: new since the last run, or persisting from it."
    )
    since: str | None = Field(
        default=None, description="Daemon runs: when this was first seen (ISO 8601)."
    )


class Metric(BaseModel):
    name: str
    value: float
    unit: str
    labels: dict[str, str] = Field(default_factory=dict)
    kind: Literal["gauge", "counter", "event"] = Field(
        default="gauge",
        description="From the metric's declaration in its check: every reporter reads it.",
    )


class SeriesLine(BaseModel):
    """One quantity a check sampled over time: `values[i]` at `t[i]` seconds."""

    name: str = Field(description="What was sampled: the record's key (sm_clock_mhz, power_w).")
    label: str
    unit: str = Field(description="As the metrics write units: MHz, W, Cel, ms.")
    t: list[float] = Field(description="Seconds from the start of the workload.")
    values: list[float | None] = Field(description="None: not readable at that moment.")

    @model_validator(mode="after")
    def _paired(self) -> SeriesLine:
        if len(self.t) != len(self.values):
            raise ValueError(f"{self.name}: {len(self.t)} times for {len(self.values)} values")
        return self


class Moment(BaseModel):
    """A time worth marking on a device's series (when the steady state began)."""

    t: float
    label: str


class Level(BaseModel):
    """A value worth marking on the lines of its unit (the power limit, 83 °C)."""

    value: float
    unit: str
    label: str


class Series(BaseModel):
    """What a check sampled on one device while its workload ran (the soak: every second), for
    reporters that draw it (html). The facts hold the statistics; this is the shape behind
    them. Per-second points at most."""

    device: Device
    lines: list[SeriesLine]
    moments: list[Moment] = Field(default_factory=list)
    levels: list[Level] = Field(default_factory=list)


class CheckResult(BaseModel):
    name: str
    layer: Layer = Layer.RUNTIME
    status: Status
    duration_s: float = 0.0
    error: str | None = None
    skip_reason: str | None = None
    findings: list[Finding] = Field(default_factory=list)
    metrics: list[Metric] = Field(default_factory=list)
    facts: dict[str, Any] = Field(default_factory=dict)
    not_judged: list[str] = Field(
        default_factory=list, description="Judgements the check could not make, with why."
    )
    series: list[Series] = Field(
        default_factory=list,
        description="Per-device time series of an active check (the soak's trace), one per "
        "GPU; empty for the passive checks.",
    )


class Verdict(BaseModel):
    """A rule's outcome: for one node or one GPU."""

    rule: str
    status: Status
    message: str
    layer: Layer = Layer.RUNTIME
    device: Device | None = None
    action: str | None = None
    action_category: ActionCategoryName | None = Field(
        default=None,
        description="What an automation may do (from the rule's declaration), beside `action`.",
    )
    source: str | None = None
    explains: list[str] = Field(
        default_factory=list, description="Codes of findings/rules this verdict is the cause of."
    )
    explained_by: list[str] = Field(default_factory=list)
    reason: str | None = Field(default=None, description="Why unknown or skipped.")
    state: DaemonMark | None = Field(
        default=None, description="Daemon runs: new since the last run, or persisting from it."
    )
    since: str | None = Field(
        default=None, description="Daemon runs: when this was first seen (ISO 8601)."
    )


class Cleared(BaseModel):
    """A finding or fired verdict of the previous daemon run that is gone now (reported once)."""

    kind: Literal["finding", "verdict"]
    code: str = Field(description="The finding's code or the verdict's rule id.")
    check: str | None = Field(default=None, description="The check that raised the finding.")
    device: Device | None = None
    status: Status = Field(description="What it was when last seen (warning or critical).")
    message: str
    since: str | None = Field(default=None, description="When it was first seen (ISO 8601).")
    last_seen: str | None = None


class CounterDelta(BaseModel):
    """A cumulative counter (AER, replay, ECC, NVLink errors) against the previous daemon run."""

    check: str
    name: str
    unit: str
    labels: dict[str, str] = Field(default_factory=dict)
    value: float
    previous: float | None = Field(default=None, description="None: no earlier value.")
    delta: float | None = Field(
        default=None, description="Increase since the previous run; None without a baseline."
    )
    reset: bool = Field(
        default=False, description="The counter restarted (reboot, driver reload): delta = value."
    )
    interval_s: float | None = None


class DaemonInfo(BaseModel):
    """What a daemon run knew of the previous one: its state, the kernel-log cursor."""

    state_dir: str
    previous_run: str | None = None
    kernel_log: str | None = Field(
        default=None, description="How the kernel log was read: resumed after a cursor, or why not."
    )
    notes: list[str] = Field(default_factory=list)


class Report(BaseModel):
    schema_version: str = SCHEMA_VERSION
    sitscheck_version: str
    host: str
    started_at: str
    duration_s: float
    status: Status
    headline: str
    mode: str = Field(description="live, or replay of a bundle")
    bundle: str | None = None
    bundle_recorded_at: str | None = Field(
        default=None, description="Replays: when the bundle was recorded (its meta.json)."
    )
    profile: str | None = None
    checks: list[CheckResult]
    verdicts: list[Verdict] = Field(default_factory=list)
    cleared: list[Cleared] = Field(
        default_factory=list, description="Daemon runs: conditions gone since the last run."
    )
    deltas: list[CounterDelta] = Field(
        default_factory=list, description="Daemon runs: cumulative counters against the last run."
    )
    daemon: DaemonInfo | None = None

    @property
    def exit_code(self) -> int:
        return self.status.exit_code

    @property
    def hostname(self) -> str | None:
        """The node's host name; None for a replayed bundle that does not record it."""
        return None if self.host == NO_HOST else self.host

    def check(self, name: str) -> CheckResult | None:
        return next((c for c in self.checks if c.name == name), None)
