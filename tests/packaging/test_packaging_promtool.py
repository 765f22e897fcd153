"""The textfile against Prometheus' own linter and dcgm-exporter's label scheme; the shipped
alerting rules against `promtool test rules` (issue 20).

promtool (Debian's `prometheus` package; tools/ci-packaging.sh installs it) lints the file
of every recorded bundle: it must find nothing to say. dcgm-exporter's join labels are kept as
it spells them (`gpu`, `UUID`, `pci_bus_id`, `Hostname`); its `modelName` is promtool's one
objection (camelCase), so the model is `model_name`.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.reporters.prom import dcgm_bus_id, render_prom

REPO = Path(__file__).resolve().parents[2]
BUNDLES = REPO / "tests" / "bundles"
RECORDED = sorted(p.parent for p in BUNDLES.rglob("meta.json") if (p.parent / "nvml.json").exists())
PROMTOOL = shutil.which("promtool")
RULES = REPO / "packaging" / "prometheus"
DCGM_LABELS = ("gpu", "UUID", "pci_bus_id", "model_name", "Hostname")

needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (apt-get install prometheus)"
)


def textfile(bundle: Path) -> str:
    return render_prom(execute(RunRequest(RunConfig(), str(bundle))), False)


@pytest.fixture(
    scope="module", params=RECORDED, ids=[str(p.relative_to(BUNDLES)) for p in RECORDED]
)
def rendered(request: pytest.FixtureRequest) -> str:
    return textfile(request.param)


def promtool(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


@needs_promtool
def test_promtool_check_metrics_is_clean(rendered: str) -> None:
    done = promtool("check", "metrics", stdin=rendered)
    assert done.returncode == 0 and not (done.stdout + done.stderr).strip(), done


def test_every_per_gpu_series_carries_dcgm_exporters_labels(rendered: str) -> None:
    """Each GPU has one identity across all its series: all the labels, or (a GPU lost
    before any source of the bundle could name it) the index and host, with its bus id where
    another source (nvidia-smi, sysfs) still knew it; no label is ever empty."""
    identities: dict[str, set[tuple[tuple[str, str], ...]]] = {}
    for family in text_string_to_metric_families(rendered):
        for sample in family.samples:
            assert all(value != "" for value in sample.labels.values()), sample
            assert not any(k in sample.labels for k in ("hw_id", "gpu_index", "stat")), sample
            if "gpu" not in sample.labels:
                assert "UUID" not in sample.labels and "model_name" not in sample.labels, sample
                continue
            identity = tuple((k, sample.labels[k]) for k in DCGM_LABELS if k in sample.labels)
            identities.setdefault(sample.labels["gpu"], set()).add(identity)
    assert identities
    for gpu, seen in identities.items():
        assert len(seen) == 1, (gpu, seen)  # one label scheme
        (identity,) = seen
        names = [k for k, _ in identity]
        assert names in (
            list(DCGM_LABELS),
            ["gpu", "Hostname"],
            ["gpu", "pci_bus_id", "Hostname"],
        ), (gpu, identity)
        if names == list(DCGM_LABELS):
            labels = dict(identity)
            assert labels["UUID"].startswith("GPU-")
            assert labels["pci_bus_id"] == labels["pci_bus_id"].upper()
    assert any(len(next(iter(seen))) == len(DCGM_LABELS) for seen in identities.values())


def test_a_health_series_per_gpu_and_the_pending_remap() -> None:
    text = textfile(BUNDLES / "faults" / "remap-pending-gpu0")
    found = {
        (s.name, s.labels.get("gpu")): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name in ("sitscheck_gpu_health_status", "sitscheck_gpu_predicted_failure")
    }
    assert found[("sitscheck_gpu_predicted_failure", "0")] == 1
    assert found[("sitscheck_gpu_predicted_failure", "1")] == 0
    assert found[("sitscheck_gpu_health_status", "0")] >= 1  # at least a warning
    healthy = textfile(BUNDLES / "h200x2-idle-v0")
    assert "sitscheck_gpu_predicted_failure{" in healthy
    for family in text_string_to_metric_families(healthy):
        if family.name == "sitscheck_gpu_predicted_failure":
            assert [s.value for s in family.samples] == [0, 0]


def test_values_are_in_base_units() -> None:
    families = {
        f.name: f for f in text_string_to_metric_families(textfile(BUNDLES / "h200x2-idle-v0"))
    }
    assert "sitscheck_gpu_clock_megahertz" not in families
    clock_max = [
        s.value
        for s in families["sitscheck_gpu_clock_max_hertz"].samples
        if s.labels.get("clock") == "sm"
    ]
    assert clock_max == [1.98e9, 1.98e9]  # 1980 MHz, as the bundle's nvml.json records
    assert not [n for n in families if n.endswith("_ratio") and "remap" in n]  # flags


def test_dcgm_bus_ids() -> None:
    assert dcgm_bus_id("0000:3b:00.0") == "00000000:3B:00.0"
    assert dcgm_bus_id("00000000:65:00.0") == "00000000:65:00.0"
    assert dcgm_bus_id(None) is None


@needs_promtool
def test_the_shipped_alerting_rules_pass_promtool() -> None:
    checked = promtool("check", "rules", str(RULES / "sitscheck-alerts.yaml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = promtool("test", "rules", str(RULES / "sitscheck-alerts.test.yaml"))
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_every_alert_has_a_rules_test() -> None:
    import yaml

    rules = yaml.safe_load((RULES / "sitscheck-alerts.yaml").read_text())
    tests = yaml.safe_load((RULES / "sitscheck-alerts.test.yaml").read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r}
    tested = {t["alertname"] for case in tests["tests"] for t in case["alert_rule_test"]}
    assert alerts - {"SitscheckTextfileUnreadable"} <= tested
