"""Helpers of the GPU-check suite: bundles, a replay runner, what a report shows above ok."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.models import Report, Severity, Status

TESTS = Path(__file__).resolve().parent.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

REPO = TESTS.parent
IDLE = TESTS / "bundles" / "h200x2-idle-v0"
FAULTS = TESTS / "bundles" / "faults"
CSV_BUNDLES = Path(__file__).resolve().parent / "bundles"
GPU_CHECKS = ["driver", "pcie_link", "gpu_telemetry", "memory_errors", "nvlink"]
BAD = (Status.WARNING, Status.CRITICAL, Status.UNKNOWN)


def run_bundle(bundle: Path, checks: list[str] | None = None, **config: Any) -> Report:
    """Replay a bundle through the GPU checks, the built-in rules and profiles."""
    settings = RunConfig(checks=checks or GPU_CHECKS, **config)
    return execute(RunRequest(settings, str(bundle)))


def above_ok(report: Report) -> list[tuple[str, str, int | None]]:
    """Everything worse than ok: (kind, code or rule or check, GPU index)."""
    found: list[tuple[str, str, int | None]] = []
    for check in report.checks:
        if check.error is not None:
            found.append(("error", check.name, None))
        for finding in check.findings:
            if finding.severity not in (Severity.INFO,):
                index = finding.device.index if finding.device else None
                found.append(("finding", finding.code, index))
    for verdict in report.verdicts:
        if verdict.status in BAD:
            index = verdict.device.index if verdict.device else None
            found.append(("verdict", verdict.rule, index))
    return sorted(found, key=repr)


def facts_of(report: Report, check: str, index: int) -> dict[str, Any]:
    result = report.check(check)
    assert result is not None, check
    return next(g for g in result.facts["gpus"] if g["index"] == index)


def nvidia_smi_only(bundle: Path, tmp_path: Path) -> Path:
    """A copy of `bundle` without nvml.json: the checks must fall back to nvidia-smi."""
    target = tmp_path / (bundle.name + "-smi")
    shutil.copytree(bundle, target)
    (target / "nvml.json").unlink()
    return target
