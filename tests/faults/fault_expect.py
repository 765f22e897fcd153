"""What every fault test asserts: in time, the fault named where it hit, nothing else lost."""

from __future__ import annotations

import re
from typing import Any

from sitscheck.models import CheckResult, Report, Status

BAD = (Status.UNKNOWN, Status.CRITICAL)
CHECKS = (
    "bandwidth",
    "compute",
    "driver",
    "gpu_telemetry",
    "infiniband",
    "memory_errors",
    "memtest",
    "multigpu",
    "nvlink",
    "pcie_aer",
    "pcie_link",
    "soak",
    "tensorrt",
    "topology",
    "xid",
)
GPU_CHECKS = ("driver", "gpu_telemetry", "memory_errors", "nvlink", "pcie_link", "topology")
KERNEL_LOG_CHECKS = ("pcie_aer", "xid")


def result(report: Report, name: str) -> CheckResult:
    found = report.check(name)
    assert found is not None, f"{name} missing from the report"
    return found


def said(check: CheckResult) -> str:
    """Everything a check says in words: error, skip reason, findings, what it could not judge."""
    parts = [check.error or "", check.skip_reason or ""]
    parts += [f"{f.code}: {f.message}" for f in check.findings]
    parts += check.not_judged
    return "\n".join(parts)


def outline(check: CheckResult) -> tuple[str, list[str], bool]:
    """What must not change where a fault did not hit: status, finding codes, no error."""
    return check.status.value, sorted(f.code for f in check.findings), check.error is None


def assert_complete(report: Report) -> None:
    """Every check has a result: none was lost to the fault."""
    assert [c.name for c in report.checks] == list(CHECKS), report.headline


def killed_after_timeout(command: str = "") -> re.Pattern[str]:
    """How a command killed at its timeout is named (the measured seconds vary with load)."""
    return re.compile(re.escape(command) + r"`? did not answer within \d+(\.\d)? s[^;]*; killed")


def names(text: str, cause: str | re.Pattern[str]) -> bool:
    return cause in text if isinstance(cause, str) else cause.search(text) is not None


def assert_faulted(
    report: Report, name: str, *causes: str | re.Pattern[str], statuses: Any = BAD
) -> None:
    """`name` is UNKNOWN (or CRITICAL) and names each cause."""
    check = result(report, name)
    assert check.status in statuses, (name, check.status, said(check))
    text = said(check)
    for cause in causes:
        assert names(text, cause), f"{name} does not name {cause!r}:\n{text}"


def assert_unaffected(report: Report, baseline: Report, *names: str) -> None:
    """These checks read as they do on the healthy node."""
    for name in names:
        assert outline(result(report, name)) == outline(result(baseline, name)), (
            name,
            said(result(report, name)),
        )


# What a loaded 2-core machine (load 6-8) adds to any bound here: thread and process start-up,
# the rules' compile, scheduling. Bounds are the deadline under test plus this, never a guess at
# how fast a healthy run is (elapsed time is not the point where nothing should wait: those
# tests assert what happened, a check UNKNOWN naming its cause or as on the healthy node).
LOAD_SLACK_S = 3.0


def run_bound(run_timeout_s: float) -> float:
    """The bound on a run that must end within its deadline: the deadline and the slack."""
    return run_timeout_s + LOAD_SLACK_S


def assert_within(elapsed: float, limit: float) -> None:
    assert elapsed < limit, f"the run took {elapsed:.2f}s, over its {limit:.1f}s bound"
