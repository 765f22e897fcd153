"""A check's metric as OpenTelemetry data points, by the hardware semantic conventions.

Names and instruments (`HW_METRICS`, semconv `hw.*`, development status): a check's metric of
one of these names goes out as that instrument in its unit, converting a check's unit where
that is exact (`%` to a fraction, MiB to bytes, mW to W, mJ to J); an `hw.*` metric whose unit
cannot be converted (a rate in By/s for the byte counter `hw.gpu.io`) is renamed
`sitscheck.hw.*`; every other name is a `sitscheck.*` metric in its own unit: a counter
where its check declares one (`Metric.kind`), else a gauge.

What the conventions ask beyond names:
- one gauge, one value per component: a sampled series' `stat` label does not split it; the
  window's mean is the gauge, its min/p95/max are `sitscheck.<name>.window.<stat>` gauges;
- `hw.errors` on a GPU: ECC counts with `error.type` `corrected`/`uncorrected`; only the
  volatile counts (since the driver loaded) are `hw.errors`; the aggregate (lifetime) counts
  are `sitscheck.hw.errors.aggregate`, with an unknown start time (they survive reboots), so
  the two are never summed together; PCIe AER counts are `corrected`/`uncorrected` too;
- `hw.temperature` is reported on a sensor entity: `hw.type=temperature`, its own `hw.id`,
  `hw.parent` the GPU's `hw.id`, `hw.sensor_location`;
- every attribute that is not a convention's (a check's `clock`, `state`, `gpu.index`, ...)
  is under the `sitscheck.` prefix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from msgspec import Struct

from ..models import Metric

AttrValue = str | bool | int | float | list[str]
Attrs = dict[str, AttrValue]

GAUGE, COUNTER, UPDOWN = "gauge", "counter", "updowncounter"
# start time of a cumulative point
START_COUNTERS = "counters"  # since the boot (driver load) where known, else unknown
START_UNKNOWN = "unknown"  # 0: the counter began before anything this run knows of


class Spec(Struct, frozen=True):
    """An OpenTelemetry instrument by the conventions: its kind, unit and description."""

    kind: str
    unit: str
    description: str


HW_METRICS: dict[str, Spec] = {
    "hw.gpu.utilization": Spec(GAUGE, "1", "Fraction of time spent in a specific task."),
    "hw.gpu.memory.utilization": Spec(GAUGE, "1", "Fraction of GPU memory used."),
    "hw.gpu.memory.usage": Spec(UPDOWN, "By", "GPU memory used."),
    "hw.gpu.memory.limit": Spec(UPDOWN, "By", "Size of the GPU memory."),
    "hw.gpu.io": Spec(COUNTER, "By", "Received and transmitted bytes by the GPU."),
    "hw.errors": Spec(COUNTER, "{error}", "Number of errors encountered by the component."),
    "hw.power": Spec(GAUGE, "W", "Instantaneous power consumed by the component."),
    "hw.energy": Spec(COUNTER, "J", "Energy consumed by the component."),
    "hw.temperature": Spec(GAUGE, "Cel", "Temperature in degrees Celsius."),
    "hw.temperature.limit": Spec(GAUGE, "Cel", "Temperature limit in degrees Celsius."),
    "hw.network.io": Spec(COUNTER, "By", "Received and transmitted network traffic in bytes."),
    "hw.network.packets": Spec(
        COUNTER, "{packet}", "Received and transmitted network traffic in packets (or frames)."
    ),
    "hw.network.bandwidth.limit": Spec(UPDOWN, "By/s", "Link speed."),
    "hw.network.up": Spec(UPDOWN, "1", "Link status: 1 (up) or 0 (down)."),
    "hw.status": Spec(
        UPDOWN, "1", "Operational status: 1 (true) or 0 (false) for each of the possible states."
    ),
}
AGGREGATE_ERRORS = "sitscheck.hw.errors.aggregate"
_AGGREGATE_SPEC = Spec(
    COUNTER,
    "{error}",
    "ECC errors over the GPU's life (survive reboots and driver reloads); never add to hw.errors.",
)

# The conventions' attribute names a metric may carry as they are.
SEMCONV_ATTRIBUTES = frozenset(
    {
        "hw.id",
        "hw.name",
        "hw.parent",
        "hw.type",
        "hw.model",
        "hw.vendor",
        "hw.serial_number",
        "hw.firmware_version",
        "hw.driver_version",
        "hw.state",
        "hw.sensor_location",
        "hw.gpu.task",
        "hw.limit_type",
        "error.type",
        "network.io.direction",
    }
)
PRIMARY_STAT = "mean"

# unit as a check writes it -> (OTel unit, factor)
_UNITS: dict[str, tuple[str, float]] = {
    "%": ("1", 0.01),
    "percent": ("1", 0.01),
    "1": ("1", 1.0),
    "ratio": ("1", 1.0),
    "B": ("By", 1.0),
    "By": ("By", 1.0),
    "KiB": ("By", 1024.0),
    "MiB": ("By", 1024.0**2),
    "GiB": ("By", 1024.0**3),
    "W": ("W", 1.0),
    "mW": ("W", 0.001),
    "J": ("J", 1.0),
    "mJ": ("J", 0.001),
    "Cel": ("Cel", 1.0),
    "C": ("Cel", 1.0),
    "°C": ("Cel", 1.0),
    "degC": ("Cel", 1.0),
}
_ECC = re.compile(r"^ecc_(corrected|uncorrected)$")
_AER = re.compile(r"^pcie_aer_(corrected|uncorrected|fatal|nonfatal)$")


class Point(Struct, frozen=True):
    """One data point: its metric's name and instrument, its value, its own attributes (the
    component's identity is added by the caller), and where a cumulative one starts."""

    name: str
    spec: Spec
    value: float
    attrs: Attrs
    start: str = START_COUNTERS
    sensor: str | None = None  # hw.temperature: the sensor's location on the component


def otel_point(metric: Metric) -> Point:
    """A check's metric as one OTel data point (identity attributes not yet added)."""
    labels = dict(metric.labels)
    stat = labels.pop("stat", None)
    name, spec, value = _instrument(metric.name, metric.unit, metric.value)
    if metric.kind == "counter" and spec.kind == GAUGE and stat is None:
        spec = Spec(COUNTER, spec.unit, spec.description)  # as its check declared it
    if stat is not None and stat != PRIMARY_STAT:  # the window's other statistics
        base = name if name.startswith("sitscheck.") else f"sitscheck.{name}"
        name = f"{base}.window.{stat}"
        spec = Spec(GAUGE, spec.unit, f"{stat} over the sampling window")
    start = START_COUNTERS
    error_type = labels.get("error.type", "")
    if name == "hw.errors":
        if (ecc := _ECC.match(error_type)) is not None:
            labels["error.type"] = ecc.group(1)
            labels["sitscheck.error.source"] = "ecc"
            if labels.pop("ecc.scope", "volatile") == "aggregate":
                name, spec, start = AGGREGATE_ERRORS, _AGGREGATE_SPEC, START_UNKNOWN
        elif (aer := _AER.match(error_type)) is not None:
            labels["error.type"] = "corrected" if aer.group(1) == "corrected" else "uncorrected"
            labels["sitscheck.error.source"] = "pcie_aer"  # `severity` keeps nonfatal/fatal
    sensor = labels.get("hw.sensor_location") if name == "hw.temperature" else None
    return Point(name, spec, value, custom_attrs(labels), start, sensor)


def custom_attrs(labels: Mapping[str, str]) -> Attrs:
    """A check's labels as attributes: the conventions' names as they are, others under
    `sitscheck.` (a name already there is kept)."""
    out: Attrs = {}
    for key, value in labels.items():
        if key in SEMCONV_ATTRIBUTES or key.startswith("sitscheck."):
            out[key] = value
        else:
            out[f"sitscheck.{key}"] = value
    return out


def _instrument(name: str, unit: str, value: float) -> tuple[str, Spec, float]:
    spec = HW_METRICS.get(name)
    if spec is not None:
        converted = _convert(value, unit, spec.unit)
        if converted is not None:
            return name, spec, converted
    if not name.startswith("sitscheck.") or name in HW_METRICS:
        name = f"sitscheck.{name}"  # an hw.* name whose unit does not fit is not that metric
    return name, Spec(GAUGE, unit, ""), value


def _convert(value: float, unit: str, wanted: str) -> float | None:
    if unit == wanted:
        return value
    if wanted.startswith("{") and (unit in ("", "1") or re.fullmatch(r"\{[^}]*\}", unit)):
        return value
    known = _UNITS.get(unit.strip())
    if known is None or known[0] != wanted:
        return None
    return value * known[1]
