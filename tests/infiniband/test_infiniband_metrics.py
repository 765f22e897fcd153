"""The check's metrics as the OTLP export and the Prometheus textfile carry them: the hardware
semantic conventions' `hw.network.*` and `hw.errors` (not renamed `sitscheck.hw.*`), their
kinds as declared, the port named by `hca`/`port` and its PCI function by `pci_bus_id`."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.export.semconv import COUNTER, UPDOWN, otel_point
from sitscheck.models import Report
from sitscheck.reporters.prom import render_prom

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ib_tree import fact_bundles


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Report:
    hgx = fact_bundles(tmp_path_factory.mktemp("ib"))[0]
    return execute(RunRequest(RunConfig(), str(hgx)))


def test_otlp_points_follow_the_hardware_conventions(report: Report) -> None:
    check = report.check("infiniband")
    assert check is not None
    kinds = {}
    for metric in check.metrics:
        point = otel_point(metric)
        kinds[point.name] = (point.spec.kind, point.spec.unit)
        if metric.name.startswith("hw."):
            assert point.name == metric.name, metric  # in the convention's unit: not renamed
            assert point.attrs["hw.type"] == "network"
    assert kinds["hw.network.io"] == (COUNTER, "By")
    assert kinds["hw.network.packets"] == (COUNTER, "{packet}")
    assert kinds["hw.network.up"] == (UPDOWN, "1")
    assert kinds["hw.network.bandwidth.limit"] == (UPDOWN, "By/s")
    assert kinds["hw.errors"] == (COUNTER, "{error}")
    io = next(m for m in check.metrics if m.name == "hw.network.io")
    assert otel_point(io).attrs["network.io.direction"] in ("transmit", "receive")
    assert otel_point(io).attrs["sitscheck.hca"] == "mlx5_0"


def test_the_textfile_names_each_port(report: Report) -> None:
    text = render_prom(report, False)
    families = {f.name: f for f in text_string_to_metric_families(text)}
    up = families["sitscheck_hw_network_up"]  # a 0/1 flag: no `_ratio`
    assert up.type == "gauge"
    states = {(s.labels["hca"], s.labels["port"]): s.value for s in up.samples}
    assert states[("mlx5_0", "1")] == 1 and states[("mlx5_3", "1")] == 0  # down at the end
    first = next(s for s in up.samples if s.labels["hca"] == "mlx5_0")
    assert first.labels["pci_bus_id"] == "00000000:00:0A.0"  # dcgm-exporter's spelling
    assert first.labels["check"] == "infiniband" and "gpu" not in first.labels
    io = families["sitscheck_hw_network_io_bytes"]
    assert io.type == "counter"
    assert {s.labels["network_io_direction"] for s in io.samples} == {"transmit", "receive"}
    limit = families["sitscheck_hw_network_bandwidth_limit_bytes_per_second"]
    assert {s.value for s in limit.samples} == {50e9}
    errors = families["sitscheck_hw_errors"]
    assert errors.type == "counter"
    assert "symbol_error" in {s.labels["error_type"] for s in errors.samples}
    assert families["sitscheck_infiniband_retransmits"].type == "counter"


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_finds_nothing_to_say(report: Report) -> None:
    done = subprocess.run(
        ["promtool", "check", "metrics"],
        input=render_prom(report, False),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done
