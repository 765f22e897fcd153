"""node-problem-detector: one line of at most 80 bytes, exit 0 ok / 1 problem / 2 unknown."""

from __future__ import annotations

import pytest
from msgspec.structs import replace
from sitscheck.models import CheckResult, Device, Finding, Layer, Report, Severity, Status, Verdict
from sitscheck.reporters.npd import fit, npd_exit_code, npd_line, render_npd, root_cause


def with_status(report: Report, status: Status, **update: object) -> Report:
    return replace(report, status=status, **update)


def test_healthy_node(ok_report: Report) -> None:
    text = render_npd(ok_report, False)
    assert text.endswith("\n") and text.count("\n") == 1
    assert text.startswith("ok: ") and len(text.rstrip("\n").encode()) <= 80
    assert npd_exit_code(ok_report) == 0


def test_critical_node_names_its_root_cause(critical_report: Report) -> None:
    line = npd_line(critical_report)
    assert line.startswith("critical: xid.79 GPU0")
    assert len(line.encode("utf-8")) <= 80 and line.isascii() and line.isprintable()
    assert npd_exit_code(critical_report) == 1


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (Status.OK, 0),
        (Status.SKIPPED, 0),
        (Status.WARNING, 0),
        (Status.CRITICAL, 1),
        (Status.UNKNOWN, 2),
    ],
)
def test_exit_code_mapping(ok_report: Report, status: Status, code: int) -> None:
    assert npd_exit_code(with_status(ok_report, status)) == code


def test_root_cause_prefers_the_lowest_layer_verdict_that_nothing_explains(
    ok_report: Report,
) -> None:
    gpu = Device(index=3, pci_bus_id="0000:3b:00.0")
    verdicts = [
        Verdict(
            rule="xid.fell_off_bus",
            status=Status.CRITICAL,
            message="GPU fell off the bus",
            layer=Layer.DRIVER,
            device=gpu,
            explained_by=["pcie_aer.fatal_upstream"],
        ),
        Verdict(
            rule="pcie_aer.fatal_upstream",
            status=Status.CRITICAL,
            message="uncorrectable fatal AER on the GPU's upstream port — reseat the riser",
            layer=Layer.HARDWARE,
            device=gpu,
        ),
    ]
    report = with_status(ok_report, Status.CRITICAL, verdicts=verdicts)
    assert root_cause(report).startswith("pcie_aer.fatal_upstream GPU3: uncorrectable")
    line = npd_line(report)
    assert len(line) <= 80 and line.endswith("...")


def test_unknown_says_what_could_not_run(ok_report: Report) -> None:
    broken = CheckResult(name="nvlink", status=Status.UNKNOWN, error="NVML hung")
    report = with_status(ok_report, Status.UNKNOWN, checks=[broken], verdicts=[])
    assert npd_line(report) == "unknown: could not run: nvlink"


def test_unknown_finding_is_a_root_cause(ok_report: Report) -> None:
    finding = Finding(code="driver.not_loaded", severity=Severity.UNKNOWN, message="no driver")
    check = CheckResult(name="driver", status=Status.UNKNOWN, findings=[finding])
    report = with_status(ok_report, Status.UNKNOWN, checks=[check], verdicts=[])
    assert npd_line(report) == "unknown: driver.not_loaded: no driver"


def test_fit_is_one_printable_ascii_line_of_at_most_the_limit() -> None:
    text = "Xid 79 ×3 on GPU 0 — fell\noff\tthe bus\x1b[0m " + "é" * 200
    line = fit(text)
    assert line.isascii() and line.isprintable() and len(line) == 80
    assert line.startswith("Xid 79 x3 on GPU 0 - fell off the bus\\x1b[0m e")  # ESC shown
    assert fit("short") == "short"
