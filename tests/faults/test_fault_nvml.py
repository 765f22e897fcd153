"""NVML faults on a live run: init fails, init or a call blocks forever, a GPU is lost mid-run.

NVML is the recorded 2×H200 session replayed by `tests/fakes/fake_pynvml.py` with its fault
hooks; the run is the whole of `app.execute` (checks, then rules) on the fake node.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakes.procs import read_pids, still_running
from fault_expect import (
    GPU_CHECKS,
    KERNEL_LOG_CHECKS,
    LOAD_SLACK_S,
    assert_complete,
    assert_faulted,
    assert_unaffected,
    assert_within,
    killed_after_timeout,
    result,
    run_bound,
    said,
)
from fault_node import FAST, SMI_FILES, NodeSpec, hang_command, run_live, write_smi
from sitscheck.models import Report, Status

NVML_SAMPLED = ("gpu_telemetry", "memory_errors", "nvlink", "pcie_link")
MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"


def test_nvml_init_failing_like_nvidia_smi_on_a_version_mismatch_is_critical_naming_both(
    node: NodeSpec, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A driver upgraded without a reboot: NVML and nvidia-smi both refuse, the same way. The
    driver serves no GPU: critical (issue 29, item 5; before: UNKNOWN); the other GPU checks
    cannot read a GPU and say why."""
    node.nvml.fail_init = "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
    write_smi(node, dict.fromkeys(SMI_FILES, f'echo "{MISMATCH}"; exit 18'))
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, run_bound(FAST["run_timeout_s"]))
    assert_complete(report)
    for name in GPU_CHECKS:
        assert_faulted(report, name, "NVML_ERROR_LIB_RM_VERSION_MISMATCH", f"exited 18: {MISMATCH}")
    assert [f.code for f in result(report, "driver").findings] == ["driver.version_mismatch"]
    assert_unaffected(report, baseline, *KERNEL_LOG_CHECKS, "tensorrt")
    assert report.status == Status.CRITICAL


def test_nvml_init_failing_alone_falls_back_to_nvidia_smi_naming_it(
    node: NodeSpec, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    node.nvml.fail_init = "NVML_ERROR_UNKNOWN"
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, run_bound(FAST["run_timeout_s"]))
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

    assert_within(elapsed, run_bound(FAST["run_timeout_s"]))
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

    assert_within(elapsed, FAST["sample_seconds"] + 4 * FAST["nvml_deadline_s"] + LOAD_SLACK_S)
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

    assert_within(elapsed, run_bound(FAST["run_timeout_s"]))
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


def test_a_hung_nvml_call_runs_under_the_checks_deadline_not_nvmls_and_is_named(
    node: NodeSpec, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVML's own deadline (30 s) past the check's (4 s): the hung call is cut at what is left
    of the check's deadline and named by every check that waited on it (before: it waited its
    30 s, the checks ended "timed out: no result within its deadline", naming nothing)."""
    node.nvml.block = [("nvmlDeviceGetPowerUsage", 1)]
    report, elapsed = run_live(node, monkeypatch.setattr, nvml_deadline_s=30.0)

    # the run's deadline is the point: a generous slack for a loaded machine, far below 30 s
    assert_within(elapsed, run_bound(FAST["run_timeout_s"]))
    assert_complete(report)
    cut = re.compile(
        r"nvmlDeviceGetPowerUsage\(handle\) did not answer within \d+\.\d s \(what was left"
    )
    telemetry = result(report, "gpu_telemetry")  # it reads the power draw
    assert telemetry.status == Status.UNKNOWN, said(telemetry)
    assert cut.search(said(telemetry)), said(telemetry)
    for check in report.checks:  # none waited past its deadline unnamed
        assert "no result within its deadline" not in said(check), (check.name, said(check))
        if check.status == Status.UNKNOWN:
            assert "nvmlDeviceGetPowerUsage" in said(check), (check.name, said(check))
    assert_unaffected(report, baseline, "driver", "topology", *KERNEL_LOG_CHECKS, "tensorrt")


def test_nvml_threads_are_daemons_and_carry_the_deadline_scope() -> None:
    """A thread blocked in a hung C call cannot be killed: each is a daemon (never holds up
    exit), and it runs in its caller's context, so its calls see the caller's deadline."""
    import time

    from sitscheck.sources.scope import Scope, current_scope, entered
    from sitscheck.threads import start_daemon

    seen: list[object] = []
    scope = Scope(time.monotonic() + 60)
    with entered(scope):
        thread = start_daemon(lambda: seen.append(current_scope()), name="t", in_context=True)
    assert thread.daemon
    thread.join()
    assert seen == [scope]
