"""The runner: checks concurrently, each under its deadline; every failure is UNKNOWN, named."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakes.fake_checks import (
    CrashingApplicability,
    FakeCheck,
    HangingCheck,
    MeetingCheck,
    RaisingCheck,
    finding,
)
from sitscheck.config import RunConfig, run_config
from sitscheck.contract import Check, CheckOutput, MetricSpec
from sitscheck.contract.registry import BrokenCheck, select
from sitscheck.contract.runner import run_checks, status_of
from sitscheck.errors import ProbeError
from sitscheck.models import Metric, Severity, Status
from sitscheck.sources.replay import ReplaySources


@pytest.fixture
def sources(tmp_path: Path) -> ReplaySources:
    return ReplaySources(tmp_path)


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # lets abandoned check threads finish


def config(check_timeout_s: float = 5.0, run_timeout_s: float = 10.0) -> RunConfig:
    return run_config({"check_timeout_s": check_timeout_s, "run_timeout_s": run_timeout_s})


def test_checks_run_concurrently(sources: ReplaySources) -> None:
    """Two checks that each return only once both have started: run one after another, the
    first would wait out its deadline."""
    meeting = threading.Barrier(2)
    checks: list[Check | BrokenCheck] = [
        MeetingCheck("first", barrier=meeting),
        MeetingCheck("second", barrier=meeting),
    ]
    results = run_checks(checks, sources, config(check_timeout_s=30))
    assert [(r.status, r.error) for r in results] == [(Status.OK, None), (Status.OK, None)]


def test_a_checks_duration_is_measured(sources: ReplaySources) -> None:
    (result,) = run_checks([FakeCheck("slow", sleep_s=0.3)], sources, config())
    assert result.duration_s >= 0.3


def test_results_keep_the_order_asked(sources: ReplaySources) -> None:
    checks: list[Check | BrokenCheck] = [
        FakeCheck("slow", sleep_s=0.3),
        BrokenCheck("broken", "plugin x failed to load: ImportError"),
        FakeCheck("skipped", skip="no NVLink"),
        FakeCheck("fast"),
    ]
    results = run_checks(checks, sources, config())
    assert [r.name for r in results] == ["slow", "broken", "skipped", "fast"]


def test_a_check_that_never_returns_is_unknown_within_its_deadline(
    sources: ReplaySources, gate: threading.Event
) -> None:
    checks: list[Check | BrokenCheck] = [HangingCheck("stuck", gate=gate), FakeCheck("fine")]
    stuck, fine = run_checks(checks, sources, config(check_timeout_s=0.5))
    assert not gate.is_set()  # the run ended while the check still hangs: it was not waited on
    assert stuck.status == Status.UNKNOWN
    assert stuck.error is not None and "timed out" in stuck.error
    assert fine.status == Status.OK


def test_the_run_deadline_caps_every_check(sources: ReplaySources, gate: threading.Event) -> None:
    hanging = HangingCheck("stuck", gate=gate)
    began = time.monotonic()
    (stuck,) = run_checks([hanging], sources, config(check_timeout_s=30, run_timeout_s=0.4))
    # the check's deadline is the run's (0.4 s from the start), not its own 30 s
    assert [d - began < 15 for d in hanging.deadlines] == [True]
    assert not gate.is_set()
    assert stuck.status == Status.UNKNOWN and stuck.error is not None
    assert "timed out" in stuck.error


def test_an_exception_is_unknown_naming_it(sources: ReplaySources) -> None:
    (result,) = run_checks(
        [RaisingCheck("crashy", error=ZeroDivisionError("division by zero in parser"))],
        sources,
        config(),
    )
    assert result.status == Status.UNKNOWN
    assert result.error is not None
    assert "ZeroDivisionError" in result.error and "division by zero in parser" in result.error
    assert "fake_checks.py" in result.error  # where it was raised


def test_a_probe_error_is_unknown_with_its_message(sources: ReplaySources) -> None:
    (result,) = run_checks(
        [RaisingCheck("probe", error=ProbeError("`nvidia-smi -q` timed out"))], sources, config()
    )
    assert result.status == Status.UNKNOWN
    assert result.error == "`nvidia-smi -q` timed out"


def test_a_broken_plugin_is_unknown(sources: ReplaySources) -> None:
    (result,) = run_checks(
        [BrokenCheck("nvlink", "plugin x:Y failed to load: No module named 'x'")], sources, config()
    )
    assert result.status == Status.UNKNOWN
    assert result.error == "plugin x:Y failed to load: No module named 'x'"


def test_a_skipped_check_carries_its_reason_and_does_not_run(sources: ReplaySources) -> None:
    check = FakeCheck("nvlink", skip="no NVLink on this node")
    (result,) = run_checks([check], sources, config())
    assert result.status == Status.SKIPPED
    assert result.skip_reason == "no NVLink on this node"
    assert check.ran_on == []


def test_a_crash_deciding_applicability_is_unknown_not_skipped(sources: ReplaySources) -> None:
    (result,) = run_checks([CrashingApplicability("aer")], sources, config())
    assert result.status == Status.UNKNOWN
    assert result.error is not None and "sysfs vanished" in result.error
    assert "OSError" in result.error


@pytest.mark.parametrize(
    ("severities", "error", "expected"),
    [
        ([], None, Status.OK),
        ([Severity.INFO], None, Status.OK),
        ([Severity.INFO, Severity.WARNING], None, Status.WARNING),
        ([Severity.WARNING, Severity.CRITICAL], None, Status.CRITICAL),
        ([], "half the GPUs could not be read", Status.UNKNOWN),
        ([Severity.WARNING], "partial", Status.UNKNOWN),
        ([Severity.CRITICAL], "partial", Status.CRITICAL),
    ],
)
def test_status_is_the_worst_finding_or_unknown_on_error(
    sources: ReplaySources, severities: list[Severity], error: str | None, expected: Status
) -> None:
    output = CheckOutput(findings=[finding(f"x.{s.value}", s) for s in severities], error=error)
    assert status_of(output.findings, error) == expected
    (result,) = run_checks([FakeCheck("x", output=output)], sources, config())
    assert result.status == expected
    assert result.error == error


def test_select_refuses_unknown_names_listing_known_ones() -> None:
    from sitscheck.errors import ConfigError

    checks: list[Check | BrokenCheck] = [FakeCheck("driver"), FakeCheck("xid")]
    assert [c.name for c in select(checks, ["xid"], [])] == ["xid"]
    assert [c.name for c in select(checks, [], ["xid"])] == ["driver"]
    with pytest.raises(ConfigError) as caught:
        select(checks, ["nosuch"], [])
    assert "nosuch" in str(caught.value) and "driver, xid" in str(caught.value)


@pytest.mark.parametrize(
    "output",
    [
        pytest.param(None, id="none"),
        pytest.param({"findings": []}, id="dict"),
        pytest.param(CheckOutput(findings=["not a finding"]), id="bad-finding"),  # type: ignore[list-item]
    ],
)
def test_a_check_returning_the_wrong_type_is_unknown_and_the_run_goes_on(
    sources: ReplaySources, output: object
) -> None:
    bad = FakeCheck("bad", output=output)  # type: ignore[arg-type]
    bad_result, good_result = run_checks([bad, FakeCheck("good")], sources, config())
    assert bad_result.status == Status.UNKNOWN
    assert bad_result.error
    assert good_result.status == Status.OK


def test_a_finding_or_metric_the_check_does_not_declare_makes_it_unknown(
    sources: ReplaySources,
) -> None:
    """The contract is the declarations: an undeclared code or metric is the check's error."""
    output = CheckOutput(
        findings=[finding("x.undeclared", Severity.WARNING)],
        metrics=[Metric(name="x.metric", value=1.0, unit="1")],
    )
    (result,) = run_checks([FakeCheck("x", output=output, declare_output=False)], sources, config())
    assert result.status == Status.UNKNOWN
    assert result.error is not None
    assert "finding code x.undeclared" in result.error and "metric x.metric" in result.error


def test_findings_and_metrics_get_the_kind_and_category_their_check_declares(
    sources: ReplaySources,
) -> None:
    from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, MetricKind

    class Declaring(FakeCheck):
        @property
        def codes(self) -> Codes:
            return Codes(
                [
                    CodeSpec(
                        "x.event",
                        Severity.WARNING,
                        "it happened",
                        "look at it",
                        FindingKind.EVENT,
                        ActionCategory.TRIAGE,
                    )
                ]
            )

    output = CheckOutput(
        findings=[finding("x.event", Severity.WARNING)],
        metrics=[Metric(name="x.errors", value=3.0, unit="{error}")],
    )
    check = Declaring("x", output=output, declare_output=False)
    check.metrics = (MetricSpec("x.errors", "{error}", "errors", MetricKind.COUNTER),)
    (result,) = run_checks([check], sources, config())
    assert result.error is None, result.error
    (found,) = result.findings
    assert (found.kind, found.action_category, found.action) == ("event", "triage", "look at it")
    assert result.metrics[0].kind == "counter"


def test_two_gpu_records_with_one_bus_id_make_the_check_unknown_naming_both(
    sources: ReplaySources,
) -> None:
    output = CheckOutput(
        facts={
            "gpus": [
                {"index": 0, "pci_bus_id": "0000:19:00.0"},
                {"index": 1, "pci_bus_id": "00000000:19:00.0"},
            ]
        }
    )
    (result,) = run_checks([FakeCheck("x", output=output)], sources, config())
    assert result.status == Status.UNKNOWN
    assert result.error is not None
    assert "0000:19:00.0" in result.error
    assert "record 0 (index 0" in result.error and "record 1 (index 1" in result.error
