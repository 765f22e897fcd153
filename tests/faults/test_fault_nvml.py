"""NVML faults on a live run: init fails, init or a call blocks forever, a GPU is lost mid-run.

NVML is the recorded 2×H200 session replayed by `tests/fakes/fake_pynvml.py` with its fault
hooks; the run is the whole of `app.execute` (checks, then rules) on the fake node.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.procs import read_pids, still_running
from fault_expect import (
    GPU_CHECKS,
    KERNEL_LOG_CHECKS,
    assert_complete,
    assert_faulted,
    assert_unaffected,
    assert_within,
    killed_after_timeout,
    result,
    said,
)
from fault_node import FAST, SMI_FILES, NodeSpec, hang_command, run_live, write_smi
from sitscheck.models import Report, Status

NVML_SAMPLED = ("gpu_telemetry", "memory_errors", "nvlink", "pcie_link")
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"


def test_nvml_init_failing_like_nvidia_smi_is_unknown_naming_both(
    node: NodeSpec, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver upgraded without a reboot: NVML and nvidia-smi both refuse, the same way."""
    node.nvml.fail_init = "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
    write_smi(node, dict.fromkeys(SMI_FILES, f'echo "{MISMATCH}"; exit 18'))
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, 2.0)
    assert_complete(report)
    for name in GPU_CHECKS:
        assert_faulted(report, name, "NVML_ERROR_LIB_RM_VERSION_MISMATCH", f"exited 18: {MISMATCH}")
    assert_unaffected(report, baseline, *KERNEL_LOG_CHECKS, "tensorrt")
    assert report.status == Status.UNKNOWN


def test_nvml_init_failing_alone_falls_back_to_nvidia_smi_naming_it(
    node: NodeSpec, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    node.nvml.fail_init = "NVML_ERROR_UNKNOWN"
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, 2.0)
    assert_unaffected(report, baseline, *GPU_CHECKS, *KERNEL_LOG_CHECKS, "tensorrt")
    for name in GPU_CHECKS:
        assert "nvmlInit failed: NVML_ERROR_UNKNOWN" in said(result(report, name)), name
    assert result(report, "driver").facts["source"] == "nvidia-smi -L"


def test_wedged_driver_nvml_init_and_nvidia_smi_hang_within_the_deadline(
    node: NodeSpec, baseline: Report, pidfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node.nvml.block = [("nvmlInit", None)]
    hang_command(node, pidfile)
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, FAST["run_timeout_s"])
    assert_complete(report)
    for name in GPU_CHECKS:
        assert_faulted(report, name, "nvmlInit did not return within 0.5s")
    for name in ("driver", "topology"):
        assert_faulted(report, name, killed_after_timeout())
    assert_unaffected(report, baseline, *KERNEL_LOG_CHECKS, "tensorrt")
    pids = read_pids(pidfile)
    assert pids and still_running(pids) == []


def test_an_nvml_call_blocking_forever_costs_its_deadline_and_names_the_call(
    node: NodeSpec, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    node.nvml.block_gpu = [(1, 6)]  # GPU 1 answers its identity, then its 6th call never returns
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, FAST["sample_seconds"] + 4 * FAST["nvml_deadline_s"] + 1.0)
    assert_complete(report)
    for name in NVML_SAMPLED:
        check = result(report, name)
        assert check.status == Status.UNKNOWN, (name, said(check))
        assert check.error is not None
        assert "timeout" in check.error or "NVML stopped answering at nvmlDevice" in check.error
    # what did not need the hung session's samples is as on the healthy node
    assert_unaffected(report, baseline, "driver", "topology", *KERNEL_LOG_CHECKS, "tensorrt")


def test_a_gpu_lost_mid_run_is_critical_on_that_gpu_and_the_other_is_judged(
    node: NodeSpec, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    node.nvml.lose_gpu = [(1, 6)]  # GPU_IS_LOST from GPU 1's 6th call on, mid-sampling
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, 2.0)
    assert_complete(report)
    driver = result(report, "driver")
    assert driver.status == Status.CRITICAL
    (lost,) = [f for f in driver.findings if f.code == "driver.gpu_lost"]
    assert lost.device is not None and lost.device.index == 1
    for name in NVML_SAMPLED:
        check = result(report, name)
        assert "GPU 1" in said(check) and "lost" in said(check), (name, said(check))
        judged = {g["index"]: g for g in check.facts["gpus"]}
        assert not judged[0].get("lost"), name  # GPU 0 keeps its readings
        assert judged[1].get("lost"), name
    assert_unaffected(report, baseline, *KERNEL_LOG_CHECKS, "tensorrt")
    assert report.status == Status.CRITICAL
