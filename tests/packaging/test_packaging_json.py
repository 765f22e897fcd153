"""The JSON report for automation (issue 20): each GPU device carries its UUID, each action a
machine-readable category beside its text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, get_args

import jsonschema
import pytest
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.engine.loader import load_rules, rule_files, shipped_rules_dirs
from sitscheck.errors import RuleError
from sitscheck.models import ActionCategoryName, Report
from sitscheck.reporters.json_report import render_json

REPO = Path(__file__).resolve().parents[2]
FAULTS = REPO / "tests" / "bundles" / "faults"
CATEGORIES = set(get_args(ActionCategoryName))


def report_json(report: Report) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(render_json(report))
    return data


def inventory_uuids(data: dict[str, Any]) -> dict[str, str]:
    driver = next(c for c in data["checks"] if c["name"] == "driver")
    return {g["pci_bus_id"]: g["uuid"] for g in driver["facts"]["gpus"] if g.get("uuid")}


def devices(data: dict[str, Any]) -> list[dict[str, Any]]:
    found = [f["device"] for c in data["checks"] for f in c["findings"] if f.get("device")]
    return found + [v["device"] for v in data["verdicts"] if v.get("device")]


@pytest.mark.parametrize("bundle", ["remap-pending-gpu0", "hw-slowdown-busy-gpu0", "pcie-x8-gpu1"])
def test_each_gpu_device_carries_its_uuid(bundle: str) -> None:
    data = report_json(execute(RunRequest(RunConfig(), str(FAULTS / bundle))))
    uuids = inventory_uuids(data)
    named = [d for d in devices(data) if d.get("pci_bus_id") in uuids]
    assert named, "the bundle's fault names a GPU"
    for device in named:
        assert device["uuid"] == uuids[device["pci_bus_id"]]


def test_a_kernel_log_finding_gets_the_uuid_of_its_bus(critical_report: Report) -> None:
    data = report_json(critical_report)
    uuids = inventory_uuids(data)
    xid = next(
        f
        for c in data["checks"]
        if c["name"] == "xid"
        for f in c["findings"]
        if f["code"] == "xid.79"
    )
    assert xid["device"]["uuid"] == uuids[xid["device"]["pci_bus_id"]]
    assert critical_report.check("xid") is not None  # the report itself is left as it was


def test_every_action_has_a_category(critical_report: Report) -> None:
    reports = [critical_report] + [
        execute(RunRequest(RunConfig(), str(FAULTS / b)))
        for b in ("remap-pending-gpu0", "hw-slowdown-busy-gpu0", "gpu-lost-gpu1")
    ]
    seen = 0
    for report in reports:
        data = report_json(report)
        items = [f for c in data["checks"] for f in c["findings"]] + data["verdicts"]
        for item in items:
            if item.get("action"):
                seen += 1
                assert item["action_category"] in CATEGORIES, item
    assert seen >= 4


def test_every_shipped_rule_with_an_action_declares_its_category() -> None:
    rules = load_rules(rule_files(shipped_rules_dirs())).rules
    with_action = [r for r in rules if r.action]
    assert with_action
    missing = [r.id for r in with_action if r.action_category is None]
    assert not missing, f"rules with an action but no action_category: {missing}"


def test_a_rule_with_an_unknown_category_is_refused(tmp_path: Path) -> None:
    site = tmp_path / "site.yaml"
    site.write_text(
        "rules:\n"
        "  - id: site.x\n"
        "    when: 'true'\n"
        "    severity: warning\n"
        "    message: x\n"
        "    action: drain it\n"
        "    action_category: drain_now\n"
    )
    with pytest.raises(RuleError) as caught:
        load_rules([site])
    assert "action_category" in str(caught.value) and "site.yaml" in str(caught.value)


def test_the_json_report_validates_against_the_published_schema(critical_report: Report) -> None:
    schema = json.loads((REPO / "schema" / "report.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(report_json(critical_report))
    device = schema["$defs"]["Device"]["properties"]
    assert "uuid" in device
    assert "action_category" in schema["$defs"]["Verdict"]["properties"]
