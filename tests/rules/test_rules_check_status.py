"""A check's status (its line in the checks list, `checks[].status` in the JSON report) is the
worst of its own findings and of the fired rule verdicts on its facts: the list never says
"ok" about a check whose facts a warning or critical verdict is about."""

from __future__ import annotations

from pathlib import Path

import pytest
from rule_scenarios import materialise
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.models import CheckResult, Device, Report, Status, Verdict
from sitscheck.report.assemble import checks_of, with_verdicts
from sitscheck.reporters.json_report import render_json
from sitscheck.reporters.table import render_text


def replay(bundle: Path) -> Report:
    """Replay a bundle through every check, the built-in rules and profiles."""
    return execute(RunRequest(RunConfig(), str(bundle)))


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Report]:
    root = tmp_path_factory.mktemp("status")
    names = ("replay-aer-burst-gpu0", "pcie-gen-drop-busy-aer-gpu0")
    return {name: replay(materialise(name, root / name)) for name in names}


def _status(report: Report) -> dict[str, Status]:
    return {check.name: check.status for check in report.checks}


def test_an_aer_storm_shows_its_check_as_warning_not_ok(reports: dict[str, Report]) -> None:
    # 40 corrected errors on GPU 0's path: no finding of pcie_aer's own, a warning verdict
    # (pcie_aer.corrected_rate) on its facts
    report = reports["replay-aer-burst-gpu0"]
    pcie_aer = next(c for c in report.checks if c.name == "pcie_aer")
    assert not [f for f in pcie_aer.findings if f.severity.as_status() != Status.OK]
    assert pcie_aer.status == Status.WARNING
    text = render_text(report)
    assert "  [WARN] pcie_aer (" in text and "  [ok] pcie_aer (" not in text
    assert '"status": "warning"' in render_json(report).split('"name": "pcie_aer"', 1)[1][:200]


def test_only_the_checks_a_verdict_is_on_are_raised(reports: dict[str, Report]) -> None:
    # pcie_link.gen_below_max_busy reads gpu_telemetry only to know the GPU is busy: that is
    # pcie_link's problem; quick_check.degraded_link_aer is on pcie_aer's and pcie_link's facts
    status = _status(reports["pcie-gen-drop-busy-aer-gpu0"])
    assert status["pcie_link"] == status["pcie_aer"] == Status.WARNING
    assert status["gpu_telemetry"] == status["xid"] == Status.OK


@pytest.mark.parametrize("name", ["replay-aer-burst-gpu0", "pcie-gen-drop-busy-aer-gpu0"])
def test_no_check_is_better_than_a_fired_verdict_named_after_it(
    name: str, reports: dict[str, Report]
) -> None:
    report = reports[name]
    status = _status(report)
    for verdict in report.verdicts:
        check = verdict.rule.partition(".")[0]
        if verdict.status in (Status.WARNING, Status.CRITICAL) and check in status:
            assert status[check].rank >= verdict.status.rank, verdict.rule


def _result(name: str, status: Status, error: str | None = None) -> CheckResult:
    return CheckResult(name=name, status=status, error=error)


def _verdict(rule: str, status: Status) -> Verdict:
    return Verdict(rule=rule, status=status, message="m", device=Device(index=0))


def test_which_checks_a_rule_is_on() -> None:
    names = {"pcie_aer", "pcie_link", "xid", "gpu_telemetry"}
    assert checks_of("pcie_aer.corrected_rate", ("pcie_aer",), names) == {"pcie_aer"}
    assert checks_of("pcie_link.gen_below_max_busy", ("pcie_link", "gpu_telemetry"), names) == {
        "pcie_link"
    }
    assert checks_of("quick_check.fell_off_bus_pcie", ("xid", "pcie_aer"), names) == {
        "xid",
        "pcie_aer",
    }
    assert checks_of("quick_check.nvlink_down_fabric", ("topology", "profile"), names) == set()


def test_statuses_from_verdicts() -> None:
    results = [
        _result("pcie_aer", Status.OK),
        _result("xid", Status.CRITICAL),
        _result("pcie_link", Status.UNKNOWN, error="sysfs unreadable"),
        _result("nvlink", Status.SKIPPED),
        _result("topology", Status.OK),
    ]
    verdicts = [
        _verdict("pcie_aer.corrected_rate", Status.WARNING),
        _verdict("quick_check.fell_off_bus_pcie", Status.CRITICAL),
        _verdict("pcie_link.replay_rate", Status.WARNING),
        _verdict("nvlink.crc_rate", Status.WARNING),
        _verdict("topology.nvlink_missing", Status.UNKNOWN),  # not judged: no problem found
        _verdict("topology.partial_board", Status.OK),
    ]
    reads = {"quick_check.fell_off_bus_pcie": ("xid", "pcie_aer")}
    got = {r.name: r.status for r in with_verdicts(results, verdicts, reads)}
    assert got == {
        "pcie_aer": Status.CRITICAL,  # the cross-check is on its facts too
        "xid": Status.CRITICAL,
        "pcie_link": Status.UNKNOWN,  # could not run: worse than a warning
        "nvlink": Status.SKIPPED,  # ran not at all
        "topology": Status.OK,
    }
    assert results[0].status == Status.OK  # the check's own result is not changed
