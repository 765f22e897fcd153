"""Read OTLP protobuf messages back into plain Python for assertions."""

from __future__ import annotations

from typing import Any


def value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [value(v) for v in any_value.array_value.values]
    if kind is None:
        return None
    return getattr(any_value, kind)


def attrs(key_values: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in key_values:
        assert kv.key not in out, f"attribute {kv.key} twice"
        out[kv.key] = value(kv.value)
    return out


def spans_of(request: Any) -> list[Any]:
    return [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]


def metrics_of(request: Any) -> dict[str, Any]:
    """Metric name -> Metric message (each name once per request)."""
    out: dict[str, Any] = {}
    for rm in request.resource_metrics:
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                assert metric.name not in out, f"metric {metric.name} twice"
                out[metric.name] = metric
    return out


def points(metric: Any) -> list[tuple[dict[str, Any], float]]:
    data = metric.gauge if metric.WhichOneof("data") == "gauge" else metric.sum
    return [
        (attrs(p.attributes), p.as_int if p.WhichOneof("value") == "as_int" else p.as_double)
        for p in data.data_points
    ]


def point(metric: Any, **where: Any) -> float:
    """The one data point whose attributes include `where`."""
    found = [v for a, v in points(metric) if all(a.get(k) == w for k, w in where.items())]
    assert len(found) == 1, f"{metric.name} {where}: {len(found)} points"
    return found[0]
