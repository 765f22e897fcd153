"""NVML reads that hang or fail: the check that needs them is UNKNOWN and names the call.

The stand-in pynvml (tests/fakes/fake_pynvml.py) replays the recorded H200 snapshot; its
`block()` makes one call never return until released.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.fake_pynvml import FakePynvml
from gpu_helpers import IDLE, run_bundle
from sitscheck.app import installed_evidence
from sitscheck.checks.gpu_telemetry.check import GpuTelemetryCheck
from sitscheck.checks.memory_errors.check import MemoryErrorsCheck
from sitscheck.checks.pcie_link.check import PcieLinkCheck
from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.contract.registry import discover, select
from sitscheck.contract.runner import run_checks
from sitscheck.models import Status
from sitscheck.sources.base import Artifact
from sitscheck.sources.command import CommandRunner
from sitscheck.sources.gpu_snapshot import collect_snapshot
from sitscheck.sources.live import LiveOptions, LiveSources
from sitscheck.sources.nvml import Nvml
from sitscheck.sources.replay import ReplaySources


@pytest.fixture
def recording() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((IDLE / "nvml.json").read_text())
    return data


@pytest.fixture
def hanging_power(recording: dict[str, Any]) -> Iterator[FakePynvml]:
    fake = FakePynvml(recording)
    fake.block("nvmlDeviceGetPowerUsage")
    yield fake
    fake.release()


class _SnapshotSources(ReplaySources):
    """The recorded bundle's files, but this snapshot in place of its nvml.json, and no
    nvidia-smi output (which fusion would fill NVML's gaps from: tests/gpu/test_gpu_fusion.py)."""

    def __init__(self, snapshot: dict[str, Any]) -> None:
        super().__init__(IDLE)
        self._snapshot = snapshot

    def gpu_snapshot(self) -> tuple[dict[str, Any] | None, str | None]:
        return self._snapshot, None

    def artifact(self, name: str) -> Artifact:
        if name.startswith("nvidia-smi"):
            return Artifact(name, None, name, reason=f"{name}: left out by this test")
        return super().artifact(name)


def _collect(check: Any, snapshot: dict[str, Any]) -> CheckOutput:
    sources = _SnapshotSources(snapshot)
    output: CheckOutput = check.collect(CheckContext(sources, RunConfig(), time.monotonic() + 10))
    return output


def test_a_blocking_power_read_ends_the_check_unknown_naming_the_call(
    hanging_power: FakePynvml,
) -> None:
    nvml = Nvml(hanging_power, deadline_s=0.5)
    nvml.init()
    snapshot = collect_snapshot(nvml, window_s=1.0, interval_s=0.2)
    output = _collect(GpuTelemetryCheck(), snapshot)
    assert output.error is not None
    assert "nvmlDeviceGetPowerUsage" in output.error
    # the hung read is a timeout, named (the call was abandoned: it still hangs)
    assert snapshot["gpus"][0]["unavailable"]["power.draw"] == "timeout"
    # reads made before the hang still count: memory errors are judged
    memory = _collect(MemoryErrorsCheck(), snapshot)
    assert memory.error is None and memory.findings == []


def test_live_run_with_a_hung_nvml_call(
    hanging_power: FakePynvml, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        Nvml, "load", classmethod(lambda cls, deadline_s=5.0: cls(hanging_power, deadline_s))
    )
    marker = tmp_path / "nvidiactl"
    marker.touch()
    options = LiveOptions(
        driver_markers=(str(marker),),
        nvml_deadline_s=0.5,
        sample_seconds=1.0,
        sample_interval_s=0.2,
        sys_root=str(tmp_path / "sys"),
        command_timeout_s=2.0,
    )
    live = LiveSources(
        options, CommandRunner(path=str(tmp_path / "bin")), installed=installed_evidence
    )
    try:
        checks = select(discover(), ["gpu_telemetry", "memory_errors", "nvlink"], [])
        results = {r.name: r for r in run_checks(checks, live, RunConfig())}
    finally:
        live.close()
    telemetry = results["gpu_telemetry"]
    assert telemetry.status == Status.UNKNOWN
    assert telemetry.error is not None and "nvmlDeviceGetPowerUsage" in telemetry.error
    assert results["memory_errors"].status == Status.OK
    assert hanging_power.init_count == 1  # one NVML session for every check


def test_a_failed_read_is_unknown_and_not_supported_is_not_judged(
    recording: dict[str, Any],
) -> None:
    snapshot = copy.deepcopy(recording)
    gpu = snapshot["gpus"][1]
    gpu["pcie"]["width_current"] = None
    gpu["unavailable"]["pcie.width_current"] = "error"
    gpu["failures"] = {"pcie.width_current": "nvmlDeviceGetCurrPcieLinkWidth(handle): Unknown"}
    output = _collect(PcieLinkCheck(), snapshot)
    assert output.error == (
        "GPU 1 pcie.width_current: nvmlDeviceGetCurrPcieLinkWidth(handle): Unknown"
    )
    gpu["unavailable"]["pcie.width_current"] = "not_supported"
    del gpu["failures"]
    output = _collect(PcieLinkCheck(), snapshot)
    assert output.error is None and output.findings == []
    assert "GPU 1: PCIe link width (nvml): not supported by this GPU or driver" in (
        output.not_judged
    )
    facts = next(g for g in output.facts["gpus"] if g["index"] == 1)
    assert "width_current" not in facts  # missing is never zero
    assert facts["width_max"] == 16


def test_a_failed_read_makes_the_rules_that_need_the_check_unknown(
    recording: dict[str, Any], tmp_path: Path
) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    snapshot = copy.deepcopy(recording)
    for gpu in snapshot["gpus"]:
        gpu["unavailable"]["power.draw"] = "timeout"
        gpu["failures"] = {"power.draw": "nvmlDeviceGetPowerUsage(handle): no answer in 0.5s"}
    (bundle / "nvml.json").write_text(json.dumps(snapshot))
    report = run_bundle(bundle, checks=["gpu_telemetry"])
    telemetry = report.check("gpu_telemetry")
    assert telemetry is not None and telemetry.status == Status.UNKNOWN
    rules = [v for v in report.verdicts if v.rule.startswith("gpu_telemetry.")]
    assert rules and all(v.status == Status.UNKNOWN for v in rules)
    assert all("nvmlDeviceGetPowerUsage" in (v.reason or "") for v in rules)
