"""JUnit XML for image-validation pipelines: well-formed, one testcase per check."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from msgspec.structs import replace
from sitscheck.models import CheckResult, Report, Status
from sitscheck.reporters.junit import render_junit


def parse(text: str) -> ET.Element:
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    return ET.fromstring(text.encode("utf-8"))


def suite(root: ET.Element, name: str) -> ET.Element:
    found = root.find(f"testsuite[@name='{name}']")
    assert found is not None
    return found


def test_one_testcase_per_check_and_per_verdict(ok_report: Report) -> None:
    root = parse(render_junit(ok_report, False))
    assert root.tag == "testsuites"
    checks = suite(root, "sitscheck.checks")
    names = [case.get("name") for case in checks.iter("testcase")]
    assert names == [c.name for c in ok_report.checks]
    assert checks.get("tests") == str(len(ok_report.checks))
    rules = suite(root, "sitscheck.rules")
    assert len(list(rules.iter("testcase"))) == len(ok_report.verdicts)
    assert root.get("tests") == str(len(ok_report.checks) + len(ok_report.verdicts))
    props = {p.get("name"): p.get("value") for p in checks.iter("property")}
    assert props["status"] == ok_report.status.value and props["bundle"] == ok_report.bundle


def test_statuses_map_to_failure_error_skipped(critical_report: Report) -> None:
    root = parse(render_junit(critical_report, True))
    checks = suite(root, "sitscheck.checks")
    cases = {case.get("name"): case for case in checks.iter("testcase")}
    xid = cases["xid"]
    failure = xid.find("failure")
    assert failure is not None and failure.get("type") == "critical"
    assert "xid.79" in (failure.get("message") or "")
    assert "drain" in (failure.text or "")  # the action
    assert "evidence: kernel log" in (failure.text or "")  # verbose
    assert "\x00" not in (failure.text or "") and "\x1b" not in (failure.text or "")
    skipped = [c for c in critical_report.checks if c.status == Status.SKIPPED]
    for check in skipped:
        assert cases[check.name].find("skipped") is not None
    assert checks.get("skipped") == str(len(skipped))
    assert checks.get("failures") == str(
        sum(1 for c in critical_report.checks if c.status in (Status.WARNING, Status.CRITICAL))
    )
    ok_case = cases["driver"]
    assert ok_case.find("failure") is None and ok_case.find("error") is None


def test_unknown_check_is_an_error(ok_report: Report) -> None:
    broken = CheckResult(name="nvlink", status=Status.UNKNOWN, error="NVML call timed out")
    report = replace(ok_report, checks=[broken], verdicts=[])
    root = parse(render_junit(report, False))
    error = root.find(".//testcase[@name='nvlink']/error")
    assert error is not None and error.get("message") == "NVML call timed out"
    assert suite(root, "sitscheck.checks").get("errors") == "1"
