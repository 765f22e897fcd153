"""The scenario bundle set: each scenario replayed through every check, the built-in rules and
the auto-selected profile gives exactly its expected verdicts above ok and root causes.

Scenarios are `tests/bundles/scenarios/<name>/` (rule_scenarios.py says how they are stored and
materialised). The recorded healthy H200 bundles give no verdict above ok.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rule_scenarios import BUNDLES, expected, materialise, names, replay
from sitscheck.models import Report, Status
from sitscheck.reporters.table import render_text

SCENARIOS = names()
ABOVE_OK = (Status.WARNING, Status.CRITICAL, Status.UNKNOWN)
FIRED = (Status.WARNING, Status.CRITICAL)
# Every recorded H200 node (idle and under load), and the busy variant synthesised from the
# measured H200 load figures.
HEALTHY = sorted(
    [
        *BUNDLES.glob("h200x*"),
        *(BUNDLES.parent / "gpu" / "bundles").glob("h200x*"),
        BUNDLES / "faults" / "busy-h200x2",
    ]
)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Report]:
    root = tmp_path_factory.mktemp("scenarios")
    return {name: replay(materialise(name, root / name)) for name in SCENARIOS}


def _gpu(verdict: Any) -> int | None:
    return verdict.device.index if verdict.device else None


def verdicts_above_ok(report: Report) -> list[dict[str, Any]]:
    rows = [
        {
            "rule": v.rule,
            "gpu": _gpu(v),
            "status": v.status.value,
            "explained_by": sorted(set(v.explained_by)),
        }
        for v in report.verdicts
        if v.status in ABOVE_OK
    ]
    return sorted(rows, key=lambda r: (r["rule"], -1 if r["gpu"] is None else r["gpu"]))


def _sorted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = [{**r, "explained_by": sorted(set(r.get("explained_by", [])))} for r in rows]
    return sorted(out, key=lambda r: (r["rule"], -1 if r["gpu"] is None else r["gpu"]))


def test_the_recorded_healthy_bundles_are_found() -> None:
    assert {"h200x2-idle-v0", "busy-h200x2"} <= {b.name for b in HEALTHY}


def test_at_least_twelve_scenarios_with_the_seeds_worked_example() -> None:
    assert len(SCENARIOS) >= 12
    assert "seed-worked-example" in SCENARIOS
    faulty = [n for n in SCENARIOS if expected(n)["verdicts"] or expected(n)["info"]]
    assert len(faulty) >= 12


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_gives_exactly_its_verdicts(name: str, reports: dict[str, Report]) -> None:
    report = reports[name]
    want = expected(name)
    assert verdicts_above_ok(report) == _sorted(
        [{"explained_by": [], **v} for v in want["verdicts"]]
    ), report.headline


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_root_causes_and_what_they_explain(name: str, reports: dict[str, Report]) -> None:
    report = reports[name]
    roots = [v for v in report.verdicts if v.status in FIRED and not v.explained_by]
    want = expected(name)["root_causes"]
    assert sorted((v.rule, _gpu(v)) for v in roots) == sorted((r["rule"], r["gpu"]) for r in want)
    findings = {
        (f.code, f.device.index if f.device else None)
        for check in report.checks
        for f in check.findings
    }
    for root in want:
        verdict = next(v for v in roots if v.rule == root["rule"] and _gpu(v) == root["gpu"])
        for code in root.get("explains_findings", []):
            assert code in verdict.explains, (root["rule"], code)
            assert (code, root["gpu"]) in findings, (code, sorted(findings))


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_info_verdicts(name: str, reports: dict[str, Report]) -> None:
    """Fired quick-check info verdicts (status ok: shown, never a status)."""
    info = sorted(
        (v.rule, _gpu(v))
        for v in reports[name].verdicts
        if v.rule.startswith("quick_check.") and v.status == Status.OK and v.device is not None
    )
    assert info == sorted((i["rule"], i["gpu"]) for i in expected(name)["info"])


@pytest.mark.parametrize("name", SCENARIOS)
def test_the_table_shows_each_root_cause_first_with_its_symptoms_under_it(
    name: str, reports: dict[str, Report]
) -> None:
    report = reports[name]
    text = render_text(report)
    fired = [v for v in report.verdicts if v.status in FIRED]
    if not fired:
        assert "diagnosis" not in text
        return
    lines = text.splitlines()
    start = lines.index("diagnosis (root cause first):")
    block = lines[start + 1 : lines.index("", start)]
    roots = [line for line in block if line.startswith("  [")]
    explained = [line.lstrip() for line in block if line.lstrip().startswith("explains [")]
    symptoms = [
        line for line in explained if line.startswith(("explains [CRIT]", "explains [WARN]"))
    ]
    finding_lines = [line for line in explained if line not in symptoms]
    assert len(roots) == sum(1 for v in fired if not v.explained_by)
    causes = [v for v in fired if not v.explained_by]

    def same_gpu(cause: Any, device: Any) -> bool:
        return cause.device is None or device is None or cause.device.index == device.index

    assert len(symptoms) == sum(
        1 for c in causes for v in fired if c.rule in v.explained_by and same_gpu(c, v.device)
    )
    findings = [f for check in report.checks for f in check.findings]
    assert len(finding_lines) == sum(
        1 for c in causes for f in findings if f.code in c.explains and same_gpu(c, f.device)
    )
    # hardware before driver before runtime
    layers = [line.split("]", 1)[1].split(":", 1)[0].strip() for line in roots]
    order = {"hardware": 0, "driver": 1, "runtime": 2}
    assert layers == sorted(layers, key=order.__getitem__)


def test_the_seeds_worked_example_reads_as_the_seed_says(reports: dict[str, Report]) -> None:
    report = reports["seed-worked-example"]
    text = render_text(report)
    diagnosis = text.split("diagnosis (root cause first):", 1)[1].split("\n\n", 1)[0]
    first, *rest = [line for line in diagnosis.splitlines() if line.strip()]
    assert "built for another GPU model" in first
    assert any("compute is not fully released" in line for line in rest)
    codes = {f.code for c in report.checks for f in c.findings}
    assert {
        "tensorrt.engine_mismatch",
        "tensorrt.fallback",
        "tensorrt.built_on_inconsistent",
    } <= codes


@pytest.mark.parametrize("bundle", HEALTHY, ids=[b.name for b in HEALTHY])
def test_recorded_healthy_h200_bundles_give_no_verdict_above_ok(bundle: Path) -> None:
    report = replay(bundle)
    assert report.profile == "h200-sxm"
    assert [(v.rule, _gpu(v), v.reason) for v in report.verdicts if v.status in ABOVE_OK] == []


def test_a_scenario_materialises_as_a_runnable_bundle(tmp_path: Path) -> None:
    target = materialise("pcie-x8-aer-gpu1", tmp_path / "bundle")
    assert (target / "nvml.json").is_file() and (target / "meta.json").is_file()
    assert not (target / "nvidia-smi-q.txt").exists()
    assert (
        "AER: Correctable error message received from 0000:00:07.0"
        in (target / "dmesg.txt").read_text()
    )
    assert (
        target / "sysfs/devices/pci0000:00/0000:00:07.0/current_link_width"
    ).read_text() == "8\n"
