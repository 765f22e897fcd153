"""Faults of the commands a live run starts: `nvidia-smi` hung in D state, missing, crashing,
printing cut-off or garbled output; `dmesg` hung.

Where NVML answers, nvidia-smi is only a cross-check and the topology matrix; where it does not
(pynvml unusable), nvidia-smi is every GPU check's source, so most faults are tried that way.
"""

from __future__ import annotations

import random
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
    names,
    result,
    run_bound,
    said,
)
from fault_node import (
    BUNDLE,
    FAST,
    SMI_FILES,
    NodeSpec,
    hang_body,
    hang_command,
    remove_command,
    run_live,
    write_smi,
)
from sitscheck.config import run_config
from sitscheck.models import Report, Status

RUN_DEADLINE = FAST["run_timeout_s"]
TIMED_OUT = killed_after_timeout()
NO_NVML = "pynvml cannot be imported"


def assert_no_internal_error(report: Report) -> None:
    for check in report.checks:
        assert "internal error" not in (check.error or ""), (check.name, check.error)


def assert_killed(pidfile: Path) -> None:
    pids = read_pids(pidfile)
    assert len(pids) >= 2, "the hanging command never started"
    assert still_running(pids) == [], "a hung command outlived the run"


# ---- nvidia-smi hangs (D state: SIGTERM ignored) ---------------------------------------------


def test_hung_nvidia_smi_without_nvml_is_unknown_naming_the_timeout(
    node: NodeSpec, baseline: Report, pidfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node.nvml.mode = "absent"
    hang_command(node, pidfile)
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, run_bound(RUN_DEADLINE))
    assert_complete(report)
    for name in GPU_CHECKS:
        assert_faulted(report, name, TIMED_OUT, NO_NVML)
    assert_unaffected(report, baseline, *KERNEL_LOG_CHECKS, "tensorrt")
    assert report.status == Status.UNKNOWN
    assert_killed(pidfile)


def test_hung_nvidia_smi_with_nvml_costs_one_timeout_and_loses_nothing(
    node: NodeSpec, baseline: Report, pidfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hang_command(node, pidfile)
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, 2 * FAST["command_timeout_s"] + LOAD_SLACK_S)
    assert_complete(report)
    assert_unaffected(report, baseline, *GPU_CHECKS, *KERNEL_LOG_CHECKS, "tensorrt")
    # the matrix is missing: NVML's topology is reported alone, and the hang is named
    assert names(said(result(report, "topology")), killed_after_timeout("`nvidia-smi topo -m"))
    assert_killed(pidfile)


def test_a_hung_topology_query_alone_costs_only_the_topology_check(
    node: NodeSpec, baseline: Report, pidfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node.nvml.mode = "absent"
    write_smi(node, {"topo": hang_body(pidfile)})
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, run_bound(RUN_DEADLINE))
    assert_faulted(report, "topology", killed_after_timeout("`nvidia-smi topo -m"))
    assert_unaffected(report, baseline, *KERNEL_LOG_CHECKS, "tensorrt")
    for name in ("driver", "gpu_telemetry", "memory_errors", "nvlink", "pcie_link"):
        assert result(report, name).error is None, said(result(report, name))
    assert_killed(pidfile)


# ---- nvidia-smi missing or crashing --------------------------------------------------------


def test_missing_nvidia_smi_without_nvml_is_unknown_naming_both(
    node: NodeSpec, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    node.nvml.mode = "absent"
    remove_command(node, "nvidia-smi")
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, run_bound(FAST["run_timeout_s"]))
    assert_complete(report)
    for name in GPU_CHECKS:
        assert_faulted(report, name, "nvidia-smi: command not found", NO_NVML)
    assert_unaffected(report, baseline, *KERNEL_LOG_CHECKS, "tensorrt")


CRASHES = {
    "segfault": ("kill -SEGV $$", "exited -11"),
    "nvml-error": (
        'echo "Failed to initialize NVML: Unknown Error"; exit 255',
        "exited 255: Failed to initialize NVML: Unknown Error",
    ),
}


@pytest.mark.parametrize("crash", sorted(CRASHES))
def test_crashing_nvidia_smi_is_unknown_naming_how_it_ended(
    crash: str, node: NodeSpec, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    body, said_as = CRASHES[crash]
    node.nvml.mode = "absent"
    write_smi(node, dict.fromkeys(SMI_FILES, body))
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, run_bound(FAST["run_timeout_s"]))
    assert_complete(report)
    for name in GPU_CHECKS:
        assert_faulted(report, name, said_as)
    assert_unaffected(report, baseline, *KERNEL_LOG_CHECKS, "tensorrt")


# ---- nvidia-smi prints cut-off or garbled output --------------------------------------------


def damaged_outputs(folder: Path, how: str) -> Path:
    """Each recorded nvidia-smi output, cut in the middle of its last line or garbled."""
    folder.mkdir()
    noise = random.Random(11)
    for name in SMI_FILES.values():
        data = (BUNDLE / name).read_bytes()
        if how == "truncated":
            body = data.rstrip(b"\n")
            last = body.rfind(b"\n") + 1
            damaged = body[: last + (len(body) - last) // 2]
        else:
            damaged = bytes(noise.randrange(256) for _ in range(len(data)))
        (folder / name).write_bytes(damaged)
    return folder


@pytest.mark.parametrize("how", ["truncated", "garbled"])
def test_damaged_nvidia_smi_output_never_crashes_a_check_or_costs_the_kernel_log(
    how: str, node: NodeSpec, baseline: Report, monkeypatch: pytest.MonkeyPatch
) -> None:
    node.nvml.mode = "absent"
    write_smi(node, bundle=damaged_outputs(Path(node.root) / how, how))
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, run_bound(FAST["run_timeout_s"]))
    assert_complete(report)
    assert_no_internal_error(report)
    assert_unaffected(report, baseline, *KERNEL_LOG_CHECKS, "tensorrt")
    # the CSV the GPU checks read is named with the line that broke
    for name in ("gpu_telemetry", "memory_errors", "nvlink", "pcie_link"):
        assert "--format=csv: line " in said(result(report, name)), said(result(report, name))
    if how == "garbled":
        assert_faulted(report, "driver", "not a line of nvidia-smi -L")
        assert_faulted(report, "topology", "topology.unparsable")


def test_gpu_checks_with_no_readable_gpu_are_unknown_not_ok(
    node: NodeSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    node.nvml.mode = "absent"
    write_smi(node, bundle=damaged_outputs(Path(node.root) / "garbled", "garbled"))
    report, _ = run_live(node, monkeypatch.setattr)
    for name in ("gpu_telemetry", "memory_errors", "nvlink", "pcie_link"):
        assert_faulted(report, name, "--format=csv: line ", "nvidia-smi -q")


def test_gpu_checks_read_what_is_whole_when_the_csv_is_cut(
    node: NodeSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CSV and dmon cut mid-line are refused (named); `-q`, whose cut last line is a label
    no check reads, still gives every GPU's readings (issue 18: evidence fusion)."""
    node.nvml.mode = "absent"
    write_smi(node, bundle=damaged_outputs(Path(node.root) / "truncated", "truncated"))
    report, _ = run_live(node, monkeypatch.setattr)
    for name in ("gpu_telemetry", "memory_errors", "pcie_link"):
        check = result(report, name)
        assert check.status == Status.OK, (name, said(check))
        assert check.facts["source"] == "nvidia-smi -q"
        assert [g["index"] for g in check.facts["gpus"]] == [0, 1]
        assert "--format=csv: line " in said(check)


def test_a_failed_csv_query_is_named_by_the_checks_read_from_the_other_outputs(
    node: NodeSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--query-gpu` exits with an error while `-q` and dmon answer: the GPU checks judge what
    those give and say which readings' source failed and how (not only "not in the
    evidence"); a replay of a bundle that never held the CSV notes no failure."""
    node.nvml.mode = "absent"
    failing = "echo 'Unable to determine the device handle for GPU0000:00:06.0' >&2; exit 15"
    write_smi(node, {"--query-gpu=*": failing})
    report, _ = run_live(node, monkeypatch.setattr)
    for name in ("gpu_telemetry", "memory_errors", "nvlink", "pcie_link"):
        check = result(report, name)
        assert check.status == Status.OK, (name, said(check))
        (note,) = [n for n in check.not_judged if n.startswith("`nvidia-smi --query-gpu")]
        assert "exited 15" in note and "Unable to determine the device handle" in note, note


def test_an_output_a_bundle_never_held_is_no_failure(tmp_path: Path) -> None:
    import shutil

    from sitscheck.app import RunRequest, execute

    bundle = tmp_path / "bundle"
    shutil.copytree(BUNDLE, bundle)
    (bundle / SMI_FILES["--query-gpu=*"]).unlink()
    report = execute(RunRequest(run_config({}), str(bundle)))
    for name in ("gpu_telemetry", "memory_errors", "nvlink", "pcie_link"):
        check = result(report, name)
        assert not [n for n in check.not_judged if "is not in the bundle" in n], said(check)


# ---- dmesg hangs ---------------------------------------------------------------------------


def test_hung_dmesg_falls_back_to_journalctl_naming_the_hang(
    node: NodeSpec, baseline: Report, pidfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hang_command(node, pidfile, "dmesg")
    report, elapsed = run_live(node, monkeypatch.setattr)

    assert_within(elapsed, run_bound(RUN_DEADLINE))
    assert_complete(report)
    assert_unaffected(report, baseline, *GPU_CHECKS, *KERNEL_LOG_CHECKS, "tensorrt")
    log = result(report, "xid").facts["log"]
    assert log["source"] == "journalctl -k -b --no-pager -q"
    assert names(log["note"], killed_after_timeout("`dmesg"))
    assert_killed(pidfile)


def test_a_hung_kernel_log_is_unknown_within_the_run_deadline(
    node: NodeSpec, baseline: Report, pidfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dmesg and journalctl both hung: the log is read once per run (not once per check), so
    the kernel-log checks cost two command timeouts, inside the run's deadline."""
    hang_command(node, pidfile, "dmesg")
    hang_command(node, pidfile, "journalctl")
    run_deadline = 2.5
    report, elapsed = run_live(node, monkeypatch.setattr, run_timeout_s=run_deadline)

    assert_within(elapsed, run_bound(run_deadline))
    assert_complete(report)
    for name in KERNEL_LOG_CHECKS:
        assert_faulted(report, name)
    assert_unaffected(report, baseline, *GPU_CHECKS, "tensorrt")
    assert_killed(pidfile)


def test_a_hung_nvidia_smi_without_the_module_is_named_by_the_kernel_log_checks(
    node: NodeSpec, pidfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's node: no NVIDIA kernel module (no /proc/driver/nvidia), `nvidia-smi`
    installed and hung. xid and pcie_aer map kernel-log events to GPUs through the GPU list,
    which then comes from sysfs: they say why, naming the command (before: nothing)."""
    node.nvml.mode = "absent"
    node.marker = str(Path(node.root) / "no-nvidia-module")
    hang_command(node, pidfile)
    report, _ = run_live(node, monkeypatch.setattr)

    assert_complete(report)
    for name in KERNEL_LOG_CHECKS:
        check = result(report, name)
        assert TIMED_OUT.search(said(check)), (name, said(check))
        assert "GPU list from sysfs" in said(check), (name, said(check))
        # once `nvidia-smi -L` hung, the other GPU views were not started behind it
        assert "not run, an earlier nvidia-smi command timed out" in said(check), said(check)
    pids = read_pids(pidfile)
    assert pids and still_running(pids) == []
