"""New, persisting, cleared once; counter deltas — the pure marking of a report against state."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from sitscheck.daemon.deltas import Marked, mark_report
from sitscheck.daemon.state import DaemonState
from sitscheck.models import (
    CheckResult,
    Device,
    Evidence,
    Finding,
    Metric,
    Report,
    Severity,
    Status,
    Verdict,
)

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)
GPU0 = Device(index=0, pci_bus_id="0000:3b:00.0")
GPU1 = Device(index=1, pci_bus_id="0000:5e:00.0")


def finding(code: str, severity: Severity = Severity.WARNING, device: Device = GPU0) -> Finding:
    return Finding(
        code=code,
        severity=severity,
        message=f"{code} on {device.index}",
        device=device,
        evidence=[Evidence(source="sysfs", ref="x")],
    )


def event(code: str, device: Device = GPU0) -> Finding:
    return Finding(
        code=code,
        severity=Severity.CRITICAL,
        message=code,
        device=device,
        evidence=[Evidence(source="kernel log", ref="dmesg")],
        kind="event",  # as the xid check declares its codes
    )


def check(
    name: str,
    findings: list[Finding] | None = None,
    metrics: list[Metric] | None = None,
    status: Status | None = None,
    error: str | None = None,
) -> CheckResult:
    findings = findings or []
    worst = max((f.severity.as_status() for f in findings), key=lambda s: s.rank, default=Status.OK)
    return CheckResult(
        name=name,
        status=status or (Status.UNKNOWN if error else worst),
        findings=findings,
        metrics=metrics or [],
        error=error,
    )


def verdict(rule: str, status: Status, device: Device | None = GPU0) -> Verdict:
    return Verdict(rule=rule, status=status, message=f"{rule} is {status.value}", device=device)


def report(checks: list[CheckResult], verdicts: list[Verdict] | None = None) -> Report:
    return Report(
        sitscheck_version="0.1.0",
        host="node",
        started_at=T0.isoformat(),
        duration_s=1.0,
        status=Status.WARNING,
        headline="WARNING — something",
        mode="live",
        checks=checks,
        verdicts=verdicts or [],
    )


class Runs:
    """Successive daemon runs, carrying the state forward as the session does."""

    def __init__(self, boot_id: str | None = "B1") -> None:
        self.state: DaemonState | None = None
        self.now = T0
        self.boot_id = boot_id

    def run(
        self, rep: Report, windowed: bool = False, step: timedelta = timedelta(minutes=5)
    ) -> Marked:
        marked = mark_report(
            rep, self.state, self.now, boot_id=self.boot_id, events_windowed=windowed
        )
        self.state = DaemonState(boot_id=self.boot_id, items=marked.items, counters=marked.counters)
        self.now += step
        return marked


def states(rep: Report, name: str) -> dict[str, str | None]:
    result = rep.check(name)
    assert result is not None
    return {f.code: f.state for f in result.findings}


def test_new_then_persisting_then_cleared_once() -> None:
    runs = Runs()
    first = runs.run(report([check("pcie_link", [finding("pcie_link.degraded")])])).report
    assert states(first, "pcie_link") == {"pcie_link.degraded": "new"}
    assert first.check("pcie_link").findings[0].since == T0.isoformat()  # type: ignore[union-attr]

    second = runs.run(report([check("pcie_link", [finding("pcie_link.degraded")])])).report
    assert states(second, "pcie_link") == {"pcie_link.degraded": "persisting"}
    assert second.check("pcie_link").findings[0].since == T0.isoformat()  # type: ignore[union-attr]
    assert second.cleared == []
    assert "1 persisting" in second.headline

    third = runs.run(report([check("pcie_link")])).report
    assert [(c.kind, c.code, c.check, c.status) for c in third.cleared] == [
        ("finding", "pcie_link.degraded", "pcie_link", Status.WARNING)
    ]
    assert third.cleared[0].since == T0.isoformat()
    assert "1 cleared" in third.headline

    fourth = runs.run(report([check("pcie_link")])).report
    assert fourth.cleared == []  # reported once


def test_same_code_on_another_gpu_is_new() -> None:
    runs = Runs()
    runs.run(report([check("nvlink", [finding("nvlink.down", device=GPU0)])]))
    second = runs.run(
        report(
            [
                check(
                    "nvlink",
                    [finding("nvlink.down", device=GPU0), finding("nvlink.down", device=GPU1)],
                )
            ]
        )
    ).report
    result = second.check("nvlink")
    assert result is not None
    assert [(f.device.index if f.device else None, f.state) for f in result.findings] == [
        (0, "persisting"),
        (1, "new"),
    ]


def test_escalation_is_new_and_deescalation_persists() -> None:
    runs = Runs()
    runs.run(report([check("memory_errors", [finding("ecc.sbe", Severity.WARNING)])]))
    worse = runs.run(report([check("memory_errors", [finding("ecc.sbe", Severity.CRITICAL)])]))
    assert states(worse.report, "memory_errors") == {"ecc.sbe": "new"}
    better = runs.run(report([check("memory_errors", [finding("ecc.sbe", Severity.WARNING)])]))
    assert states(better.report, "memory_errors") == {"ecc.sbe": "persisting"}


def test_check_that_could_not_run_carries_its_findings_instead_of_clearing() -> None:
    runs = Runs()
    runs.run(report([check("nvlink", [finding("nvlink.down")])]))
    timed_out = runs.run(report([check("nvlink", error="timed out after 20s")])).report
    assert timed_out.cleared == []
    skipped = runs.run(report([check("nvlink", status=Status.SKIPPED)])).report
    assert skipped.cleared == []
    absent = runs.run(report([check("xid")])).report  # nvlink not selected this run
    assert absent.cleared == []
    back = runs.run(report([check("nvlink", [finding("nvlink.down")])])).report
    assert states(back, "nvlink") == {"nvlink.down": "persisting"}
    gone = runs.run(report([check("nvlink")])).report
    assert [c.code for c in gone.cleared] == ["nvlink.down"]


def test_carried_items_expire() -> None:
    runs = Runs()
    runs.run(report([check("nvlink", [finding("nvlink.down")])]), step=timedelta(days=8))
    runs.run(report([check("nvlink", error="boom")]))
    again = runs.run(report([check("nvlink", [finding("nvlink.down")])])).report
    assert states(again, "nvlink") == {"nvlink.down": "new"}


def test_verdicts_new_persisting_cleared_and_unknown_carried() -> None:
    runs = Runs()
    one = runs.run(report([], [verdict("pcie.rate", Status.WARNING), verdict("x", Status.OK)]))
    assert [(v.rule, v.state) for v in one.report.verdicts] == [("pcie.rate", "new"), ("x", None)]
    two = runs.run(report([], [verdict("pcie.rate", Status.WARNING)]))
    assert two.report.verdicts[0].state == "persisting"
    unknown = runs.run(report([], [verdict("pcie.rate", Status.UNKNOWN)]))
    assert unknown.report.cleared == []
    missing = runs.run(report([], []))
    assert missing.report.cleared == []
    ok = runs.run(report([], [verdict("pcie.rate", Status.OK)]))
    assert [(c.kind, c.code, c.status) for c in ok.report.cleared] == [
        ("verdict", "pcie.rate", Status.WARNING)
    ]
    assert ok.report.cleared[0].device == GPU0
    again = runs.run(report([], [verdict("pcie.rate", Status.OK)]))
    assert again.report.cleared == []


def test_event_findings_are_new_each_window_and_never_clear() -> None:
    runs = Runs()
    first = runs.run(report([check("xid", [event("xid.79")])]), windowed=True).report
    assert states(first, "xid") == {"xid.79": "new"}
    again = runs.run(report([check("xid", [event("xid.79")])]), windowed=True).report
    assert states(again, "xid") == {"xid.79": "new"}  # new events in the new window
    quiet = runs.run(report([check("xid")]), windowed=True).report
    assert quiet.cleared == []


def test_event_findings_without_a_window_persist_like_conditions() -> None:
    runs = Runs()
    runs.run(report([check("xid", [event("xid.79")])]))
    again = runs.run(report([check("xid", [event("xid.79")])])).report
    assert states(again, "xid") == {"xid.79": "persisting"}
    assert runs.run(report([check("xid")])).report.cleared == []


def aer(value: float, port: str = "0000:3a:00.0") -> Metric:
    return Metric(
        name="hw.errors",
        value=value,
        unit="{error}",
        labels={"device": port, "error.type": "pcie_aer_correctable"},
        kind="counter",  # as the pcie_aer check declares it
    )


def test_counter_deltas_baseline_increase_and_reset() -> None:
    runs = Runs()
    gauge = Metric(name="sitscheck.gpu.number", value=8, unit="{gpu}")
    first = runs.run(report([check("pcie_aer", metrics=[aer(10), gauge])])).report
    assert [(d.name, d.value, d.previous, d.delta) for d in first.deltas] == [
        ("hw.errors", 10, None, None)
    ]
    second = runs.run(report([check("pcie_aer", metrics=[aer(14)])])).report
    (delta,) = second.deltas
    assert (delta.previous, delta.delta, delta.reset) == (10, 4, False)
    assert delta.interval_s == 300
    assert delta.labels["device"] == "0000:3a:00.0" and delta.check == "pcie_aer"
    dropped = runs.run(report([check("pcie_aer", metrics=[aer(3)])])).report
    (delta,) = dropped.deltas
    assert (delta.previous, delta.delta, delta.reset) == (14, 3, True)


def test_counters_restart_after_a_reboot() -> None:
    runs = Runs(boot_id="B1")
    runs.run(report([check("pcie_aer", metrics=[aer(10)])]))
    runs.boot_id = "B2"
    after = runs.run(report([check("pcie_aer", metrics=[aer(12)])])).report
    (delta,) = after.deltas
    assert (delta.delta, delta.reset) == (12, True)


def test_counters_of_a_check_that_did_not_run_are_kept() -> None:
    runs = Runs()
    runs.run(report([check("pcie_aer", metrics=[aer(10)])]))
    runs.run(report([check("pcie_aer", error="timed out")]))
    back = runs.run(report([check("pcie_aer", metrics=[aer(11)])])).report
    assert back.deltas[0].delta == 1


def test_first_run_headline_is_unchanged_and_nothing_cleared() -> None:
    rep = report([check("nvlink", [finding("nvlink.down")])])
    marked = Runs().run(rep).report
    assert marked.headline == rep.headline and marked.cleared == []
