"""The report model: what a run found, as scripts and reporters read it.

The JSON report is these models dumped as they are; `schema/report.schema.json` is generated
from them and published. Field names are a contract: add, never rename. Each is a Struct
(`sitscheck.structs`); a field declared `float` holds a float whatever number it was given
(`__post_init__`), so a count reads 3.0 in the report as every other value does.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from msgspec import Meta, Struct, field

from .status import Layer, Severity, Status, worst

__all__ = ["Layer", "Severity", "Status", "worst"]

SCHEMA_VERSION = "1.0"
# `Report.host` of a replayed bundle whose meta.json names no host
NO_HOST = "unknown (no host in the bundle's meta.json)"

# Daemon runs (`run --daemon`, `daemon`): whether a finding or fired verdict is new since the
# last run or was already there; None outside daemon runs.
DaemonMark = Literal["new", "persisting"]
Mark = Annotated[
    DaemonMark | None,
    Meta(description="Daemon runs: new since the last run, or persisting from it."),
]
FirstSeen = Annotated[
    str | None, Meta(description="Daemon runs: when this was first seen (ISO 8601).")
]
# What an automation may do about a finding or verdict (sitscheck.contract.ActionCategory).
ActionCategoryName = Literal[
    "none", "rerun", "configure", "triage", "reset_gpu", "reboot", "isolate", "replace"
]


def _real(value: float | None) -> float | None:
    return None if value is None else float(value)


class Device(Struct, frozen=True, kw_only=True):
    """The GPU (or port) a finding concerns."""

    index: int | None = None
    pci_bus_id: str | None = None
    name: str | None = None
    uuid: Annotated[
        str | None, Meta(description="The GPU's UUID (GPU-...), from the driver's inventory.")
    ] = None


class KnownGpu(Struct, frozen=True, kw_only=True):
    """A GPU's identity as a run found it. The daemon keeps the last run's (its state), so a GPU
    that stops answering keeps the UUID and model it had (`sitscheck.gpu.resolve`)."""

    index: int | None = None
    pci_bus_id: str | None = None
    uuid: str | None = None
    name: str | None = None
    pci_device_id: str | None = None


class Evidence(Struct, frozen=True, kw_only=True):
    """Where a finding came from: the source, the command/path/NVML call, a capped excerpt."""

    source: str
    ref: str | None = None
    excerpt: str | None = None


class Finding(Struct, kw_only=True):
    code: str
    severity: Severity
    message: str
    device: Device | None = None
    evidence: list[Evidence] = field(default_factory=list)
    action: str | None = None
    kind: Annotated[
        Literal["condition", "event"],
        Meta(
            description="condition: holds now and clears when it stops holding; event: happened "
            "(a log line), new once. From the code's declaration in its check."
        ),
    ] = "condition"
    action_category: Annotated[
        ActionCategoryName | None,
        Meta(
            description="What an automation may do (from the code's declaration), beside `action`."
        ),
    ] = None
    state: Mark = None
    since: FirstSeen = None


class Metric(Struct, kw_only=True):
    name: str
    value: float
    unit: str
    labels: dict[str, str] = field(default_factory=dict)
    kind: Annotated[
        Literal["gauge", "counter", "event"],
        Meta(description="From the metric's declaration in its check: every reporter reads it."),
    ] = "gauge"

    def __post_init__(self) -> None:
        self.value = float(self.value)  # a count is written 3.0, as every other value


class SeriesLine(Struct, kw_only=True):
    """One quantity a check sampled over time: `values[i]` at `t[i]` seconds."""

    name: Annotated[
        str, Meta(description="What was sampled: the record's key (sm_clock_mhz, power_w).")
    ]
    label: str
    unit: Annotated[str, Meta(description="As the metrics write units: MHz, W, Cel, ms.")]
    t: Annotated[list[float], Meta(description="Seconds from the start of the workload.")]
    values: Annotated[list[float | None], Meta(description="None: not readable at that moment.")]

    def __post_init__(self) -> None:
        if len(self.t) != len(self.values):
            raise ValueError(f"{self.name}: {len(self.t)} times for {len(self.values)} values")
        self.t = [float(t) for t in self.t]
        self.values = [None if v is None else float(v) for v in self.values]


class Moment(Struct, kw_only=True):
    """A time worth marking on a device's series (when the steady state began)."""

    t: float
    label: str

    def __post_init__(self) -> None:
        self.t = float(self.t)


class Level(Struct, kw_only=True):
    """A value worth marking on the lines of its unit (the power limit, 83 °C)."""

    value: float
    unit: str
    label: str

    def __post_init__(self) -> None:
        self.value = float(self.value)


class Series(Struct, kw_only=True):
    """What a check sampled on one device while its workload ran (the soak: every second), for
    reporters that draw it (html). The facts hold the statistics; this is the shape behind
    them. Per-second points at most."""

    device: Device
    lines: list[SeriesLine]
    moments: list[Moment] = field(default_factory=list)
    levels: list[Level] = field(default_factory=list)


class CheckResult(Struct, kw_only=True):
    name: str
    layer: Layer = Layer.RUNTIME
    status: Status
    duration_s: float = 0.0
    error: str | None = None
    skip_reason: str | None = None
    findings: list[Finding] = field(default_factory=list)
    metrics: list[Metric] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    not_judged: Annotated[
        list[str], Meta(description="Judgements the check could not make, with why.")
    ] = field(default_factory=list)
    series: Annotated[
        list[Series],
        Meta(
            description="Per-device time series of an active check (the soak's trace), one per "
            "GPU; empty for the passive checks."
        ),
    ] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.duration_s = float(self.duration_s)


class Verdict(Struct, kw_only=True):
    """A rule's outcome: for one node or one GPU."""

    rule: str
    status: Status
    message: str
    layer: Layer = Layer.RUNTIME
    device: Device | None = None
    action: str | None = None
    action_category: Annotated[
        ActionCategoryName | None,
        Meta(
            description="What an automation may do (from the rule's declaration), beside `action`."
        ),
    ] = None
    source: str | None = None
    explains: Annotated[
        list[str], Meta(description="Codes of findings/rules this verdict is the cause of.")
    ] = field(default_factory=list)
    explained_by: list[str] = field(default_factory=list)
    reason: Annotated[str | None, Meta(description="Why unknown or skipped.")] = None
    state: Mark = None
    since: FirstSeen = None


class Cleared(Struct, kw_only=True):
    """A finding or fired verdict of the previous daemon run that is gone now (reported once)."""

    kind: Literal["finding", "verdict"]
    code: Annotated[str, Meta(description="The finding's code or the verdict's rule id.")]
    check: Annotated[str | None, Meta(description="The check that raised the finding.")] = None
    device: Device | None = None
    status: Annotated[Status, Meta(description="What it was when last seen (warning or critical).")]
    message: str
    since: Annotated[str | None, Meta(description="When it was first seen (ISO 8601).")] = None
    last_seen: str | None = None


class CounterDelta(Struct, kw_only=True):
    """A cumulative counter (AER, replay, ECC, NVLink errors) against the previous daemon run."""

    check: str
    name: str
    unit: str
    labels: dict[str, str] = field(default_factory=dict)
    value: float
    previous: Annotated[float | None, Meta(description="None: no earlier value.")] = None
    delta: Annotated[
        float | None, Meta(description="Increase since the previous run; None without a baseline.")
    ] = None
    reset: Annotated[
        bool, Meta(description="The counter restarted (reboot, driver reload): delta = value.")
    ] = False
    interval_s: float | None = None

    def __post_init__(self) -> None:
        self.value = float(self.value)
        self.previous = _real(self.previous)
        self.delta = _real(self.delta)
        self.interval_s = _real(self.interval_s)


class DaemonInfo(Struct, kw_only=True):
    """What a daemon run knew of the previous one: its state, the kernel-log cursor."""

    state_dir: str
    previous_run: str | None = None
    kernel_log: Annotated[
        str | None,
        Meta(description="How the kernel log was read: resumed after a cursor, or why not."),
    ] = None
    notes: list[str] = field(default_factory=list)


class Report(Struct, kw_only=True):
    schema_version: str = SCHEMA_VERSION
    sitscheck_version: str
    host: str
    started_at: str
    duration_s: float
    status: Status
    headline: str
    mode: Annotated[str, Meta(description="live, or replay of a bundle")]
    bundle: str | None = None
    bundle_recorded_at: Annotated[
        str | None, Meta(description="Replays: when the bundle was recorded (its meta.json).")
    ] = None
    profile: str | None = None
    checks: list[CheckResult]
    verdicts: list[Verdict] = field(default_factory=list)
    cleared: Annotated[
        list[Cleared], Meta(description="Daemon runs: conditions gone since the last run.")
    ] = field(default_factory=list)
    deltas: Annotated[
        list[CounterDelta],
        Meta(description="Daemon runs: cumulative counters against the last run."),
    ] = field(default_factory=list)
    daemon: DaemonInfo | None = None

    def __post_init__(self) -> None:
        self.duration_s = float(self.duration_s)

    @property
    def exit_code(self) -> int:
        return self.status.exit_code

    @property
    def hostname(self) -> str | None:
        """The node's host name; None for a replayed bundle that does not record it."""
        return None if self.host == NO_HOST else self.host

    def check(self, name: str) -> CheckResult | None:
        return next((c for c in self.checks if c.name == name), None)
