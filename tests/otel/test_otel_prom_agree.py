"""A check's metric has one name and one unit, the base one, in OTLP and in Prometheus
(issue 29 item 14: `sitscheck.gpu.count` was `sitscheck_gpu_number`, the PCIe replay rate
per minute in OTLP and per second in Prometheus, clocks MHz and hertz, a retransmit rate a
percentage and a ratio).

What a real OTLP receiver got from a replayed run is compared with the Prometheus textfile
of the same run: the Prometheus name is the OTLP name (dots as underscores) with only the
unit and `_total` suffixes the translation adds, and the values are equal (no scaling: the
OTLP unit is already the base unit). Every metric a check declares is checked by name and
unit too, so a check no bundle here exercises (InfiniBand, TensorRT) is held to it as well.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from otel_samples import BUNDLE, settings_for
from otlp_decode import metrics_of, points
from prometheus_client.parser import text_string_to_metric_families
from receivers import HttpReceiver
from sitscheck.contract.registry import BrokenCheck, discover
from sitscheck.export.otel import export_report
from sitscheck.export.semconv import COUNTER, otel_point
from sitscheck.models import Metric, Report
from sitscheck.reporters.prom import prom_metric, render_prom

BUNDLES = [BUNDLE, BUNDLE.parent / "h200x1-bandwidth-v1", BUNDLE.parent / "h200x4-load"]


def agrees(otel_name: str, unit: str, counter: bool) -> tuple[bool, str, float]:
    """Whether the Prometheus name keeps the OTLP name, the name, and the value's factor."""
    name, factor = prom_metric(otel_name, unit, counter)
    underscored = otel_name.replace(".", "_")
    expected = underscored if underscored.startswith("sitscheck_") else f"sitscheck_{underscored}"
    return name.startswith(expected), name, factor


def declared() -> list[tuple[str, Any]]:
    found = [c for c in discover() if not isinstance(c, BrokenCheck)]
    return [(check.name, spec) for check in found for spec in check.metrics]


@pytest.mark.parametrize(
    ("check", "spec"), declared(), ids=[f"{c}:{s.name}" for c, s in declared()]
)
def test_every_declared_metric_has_one_name_and_its_base_unit(check: str, spec: Any) -> None:
    kind = getattr(spec.kind, "value", spec.kind)
    point = otel_point(Metric(name=spec.name, value=1.0, unit=spec.unit, kind=kind))
    counter = point.spec.kind == COUNTER or kind == "counter"
    same, name, factor = agrees(point.name, point.spec.unit, counter)
    assert same, f"{check}: OTLP {point.name} is Prometheus {name}"
    assert factor == 1.0, (
        f"{check}: {point.name} in {point.spec.unit!r}, Prometheus scales by {factor}"
    )


def replay(bundle: Path) -> Report:
    from sitscheck.app import RunRequest, execute
    from sitscheck.site_config import build_config

    return execute(RunRequest(build_config({}, {"sample_seconds": 0}, "test"), str(bundle)))


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.name for b in BUNDLES])
def test_what_a_receiver_gets_is_what_the_textfile_says(bundle: Path, tmp_path: Path) -> None:
    report = replay(bundle)
    with HttpReceiver() as receiver:
        result = export_report(
            report, settings_for(receiver.endpoint, "http/protobuf"), tmp_path, 5
        )
    assert result.current_delivered, result.errors
    (request,) = receiver.recorder.of("metrics")
    received = metrics_of(request)
    prom: dict[str, list[float]] = defaultdict(list)
    for family in text_string_to_metric_families(render_prom(report, False)):
        for sample in family.samples:
            prom[sample.name].append(sample.value)
    checked = set()
    for check in report.checks:
        for metric in check.metrics:
            point = otel_point(metric)
            counter = point.spec.kind == COUNTER or metric.kind == "counter"
            same, name, _ = agrees(point.name, point.spec.unit, counter)
            assert same, f"OTLP {point.name} is Prometheus {name}"
            sent = received[point.name]
            assert sent.unit == point.spec.unit
            if point.name in checked:
                continue
            checked.add(point.name)
            assert sorted(v for _, v in points(sent)) == pytest.approx(sorted(prom[name])), name
    assert {"sitscheck.gpu.number", "sitscheck.pcie.replay.rate", "sitscheck.gpu.clock"} <= checked
    replay_rate = received["sitscheck.pcie.replay.rate"]
    assert replay_rate.unit == "{replay}/s"
