"""A GPU node whose driver cannot serve its GPUs (issue 29, item 5), live and replayed.

Each fault is one edit of the fake 2×H200 node (`fault_node`): the kernel module gone, a
library/module version mismatch, NVML's library missing, nvidia-smi missing, no NVIDIA GPU on
the bus. Every case runs live (`app.execute` on the node), and again from the bundle that
`sitscheck collect` records on the same node, which must say what the recording said.

The tools' words are their public ones (none is in the shared corpus):
- nvidia-smi: "Failed to initialize NVML: Driver/library version mismatch" then "NVML library
  version: 550.54" (exit 18); "NVIDIA-SMI has failed because it couldn't communicate with the
  NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running." (exit 9);
- pynvml's strings of its error codes (`NVMLError._errcode_to_string`):
  NVML_ERROR_LIB_RM_VERSION_MISMATCH "RM has detected an NVML/RM version mismatch.",
  NVML_ERROR_LIBRARY_NOT_FOUND "NVML Shared Library Not Found";
- the kernel module (nv.c): "NVRM: API mismatch: the client has the version X, but" /
  "NVRM: this kernel module has the version Y.  Please" / ... (two lines of advice).
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from fakes.commands import write_command
from fault_expect import GPU_CHECKS, result, said
from fault_node import (
    BUNDLE,
    FAST,
    SMI_FILES,
    NodeSpec,
    install,
    invoke,
    remove_command,
    run_live,
    write_smi,
)
from sitscheck.config import run_config
from sitscheck.models import Report, Severity, Status

BUS_IDS = ("0000:00:06.0", "0000:00:07.0")  # the two H200s in the node's sysfs
SMI_MISMATCH = (
    "Failed to initialize NVML: Driver/library version mismatch",
    "NVML library version: 550.54",
)
SMI_NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
    "that the latest NVIDIA driver is installed and running."
)
PYNVML_MISMATCH = "RM has detected an NVML/RM version mismatch."
PYNVML_NO_LIBRARY = "NVML Shared Library Not Found"
API_MISMATCH = (
    "[ 1865.855970] NVRM: API mismatch: the client has the version 550.54.14, but",
    "[ 1865.855973] NVRM: this kernel module has the version 545.23.08.  Please",
    "[ 1865.855974] NVRM: make sure that this kernel module and all NVIDIA driver",
    "[ 1865.855975] NVRM: components have the same version.",
)

Fault = Callable[[NodeSpec], None]


def smi_says(node: NodeSpec, lines: tuple[str, ...] | str, status: int) -> None:
    """Every nvidia-smi invocation prints `lines` and exits `status`."""
    words = (lines,) if isinstance(lines, str) else lines
    body = f"printf '%s\\n' {' '.join(shlex.quote(w) for w in words)}; exit {status}"
    write_smi(node, dict.fromkeys(SMI_FILES, body))


def no_module(node: NodeSpec) -> None:
    """A DaemonSet whose driver mount is wrong: no module marker, no nvidia-smi."""
    os.unlink(node.marker)
    remove_command(node, "nvidia-smi")


def no_module_but_smi(node: NodeSpec) -> None:
    """The driver's tools are installed, its kernel module is not loaded."""
    os.unlink(node.marker)
    smi_says(node, SMI_NO_DRIVER, 9)


def version_mismatch(node: NodeSpec) -> None:
    """The driver upgraded without a reboot: NVML, nvidia-smi and the kernel all say so."""
    node.nvml.fail_init = "NVML_ERROR_LIB_RM_VERSION_MISMATCH"
    node.nvml.init_words = PYNVML_MISMATCH
    smi_says(node, SMI_MISMATCH, 18)
    log = Path(node.root) / "dmesg-mismatch.txt"
    log.write_text((BUNDLE / "dmesg.txt").read_text() + "\n".join(API_MISMATCH) + "\n")
    write_command(Path(node.bin), "dmesg", f"exec cat {shlex.quote(str(log))}")


def library_missing(node: NodeSpec) -> None:
    """The module is loaded; the container has no libnvidia-ml and no nvidia-smi."""
    node.nvml.fail_init = "NVML_ERROR_LIBRARY_NOT_FOUND"
    node.nvml.init_words = PYNVML_NO_LIBRARY
    remove_command(node, "nvidia-smi")


def cpu_node(node: NodeSpec) -> None:
    """No NVIDIA GPU on the bus, no module, no nvidia-smi."""
    no_module(node)
    for bus in BUS_IDS:
        shutil.rmtree(Path(node.sys_root) / "devices" / "pci0000:00" / bus)


def cpu_node_with_smi(node: NodeSpec) -> None:
    """A CPU node whose image ships nvidia-smi (the fleet's one image)."""
    cpu_node(node)
    smi_says(node, SMI_NO_DRIVER, 9)


def passthrough_node(node: NodeSpec) -> None:
    """A host whose GPUs are given to virtual machines: bound to vfio-pci, no NVIDIA module."""
    no_module(node)
    sys_root = Path(node.sys_root)
    (sys_root / "bus" / "pci" / "drivers" / "vfio-pci").mkdir(parents=True)
    for bus in BUS_IDS:
        os.symlink(
            "../../bus/pci/drivers/vfio-pci", sys_root / "devices" / "pci0000:00" / bus / "driver"
        )


def run(
    node: NodeSpec, fault: Fault, how: str, tmp_path: Path, patch: pytest.MonkeyPatch
) -> Report:
    """The report of the faulted node: live, or replayed from what `collect` recorded on it."""
    fault(node)
    if how == "live":
        report, _ = run_live(node, patch.setattr)
        return report
    from sitscheck.app import RunRequest, execute

    install(node, patch.setattr)
    bundle = tmp_path / "bundle"
    done = invoke("collect", str(bundle), "--sample-seconds", str(FAST["sample_seconds"]))
    assert done.code == 0, done.stdout + done.stderr
    return execute(RunRequest(run_config(FAST), bundle=str(bundle)))


HOW = ("live", "replayed")


# Each node whose driver serves no GPU: the fault, the code, and the words the finding quotes.
UNSERVED = {
    "a-no-module": (  # was "ok: 2 of 11 checks ran", exit 0
        no_module,
        "driver.not_loaded",
        ("no NVIDIA driver on this machine (no nvidia-smi, no module)",),
    ),
    "a-no-module-but-nvidia-smi": (
        no_module_but_smi,
        "driver.not_loaded",
        (
            "nvidia-smi is installed but the NVIDIA kernel module is not loaded",
            f"exited 9: {SMI_NO_DRIVER}",
        ),
    ),
    "b-version-mismatch": (  # was UNKNOWN
        version_mismatch,
        "driver.version_mismatch",
        (
            f"{PYNVML_MISMATCH} (NVML_ERROR_LIB_RM_VERSION_MISMATCH)",
            f"exited 18: {SMI_MISMATCH[0]} / {SMI_MISMATCH[1]}",
            "NVRM: API mismatch: the client has the version 550.54.14, but / "
            "NVRM: this kernel module has the version 545.23.08.  Please",
        ),
    ),
    "c-library-missing": (  # was UNKNOWN
        library_missing,
        "driver.library_missing",
        (f"{PYNVML_NO_LIBRARY} (NVML_ERROR_LIBRARY_NOT_FOUND)",),
    ),
}


@pytest.mark.parametrize("case", UNSERVED)
@pytest.mark.parametrize("how", HOW)
def test_gpus_on_the_bus_that_no_working_driver_serves_are_critical_quoting_why(
    how: str, case: str, node: NodeSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Critical with the code naming the failure, both bus ids and each tool's own words; a
    replay says what the recording said (never "no NVIDIA driver evidence")."""
    fault, code, words = UNSERVED[case]
    report = run(node, fault, how, tmp_path, monkeypatch)
    driver = result(report, "driver")
    assert driver.status == Status.CRITICAL, said(driver)
    (finding,) = driver.findings
    assert finding.code == code, said(driver)
    assert f"({', '.join(BUS_IDS)})" in finding.message, finding.message
    for quoted in words:
        assert f'{quoted}"' in finding.message, (quoted, finding.message)
    assert "no NVIDIA driver evidence" not in finding.message
    assert driver.facts["gpus_on_bus"] == list(BUS_IDS)
    assert report.status == Status.CRITICAL and report.status.exit_code == 2
    for name in GPU_CHECKS[1:]:  # the others read no GPU: skipped without a module, or UNKNOWN
        check = result(report, name)
        assert check.status in (Status.UNKNOWN, Status.SKIPPED), (name, said(check))
        assert check.status == Status.SKIPPED or words[0] in said(check), (name, said(check))


@pytest.mark.parametrize("how", HOW)
def test_nvidia_smi_missing_while_nvml_serves_the_gpus_is_info_not_critical(
    how: str, node: NodeSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = run(node, lambda n: remove_command(n, "nvidia-smi"), how, tmp_path, monkeypatch)
    driver = result(report, "driver")
    assert driver.status == Status.OK, said(driver)
    (finding,) = driver.findings
    assert finding.code == "driver.nvidia_smi_unavailable" and finding.severity == Severity.INFO
    assert "nvidia-smi: command not found" in finding.message
    assert driver.facts["gpu_count"] == 2
    assert all(c.status != Status.CRITICAL for c in report.checks), report.headline
    assert report.status != Status.CRITICAL


@pytest.mark.parametrize("fault", [cpu_node, cpu_node_with_smi, passthrough_node])
@pytest.mark.parametrize("how", HOW)
def test_a_cpu_node_or_a_passthrough_host_skips_the_gpu_checks(
    how: str, fault: Fault, node: NodeSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CPU node is no alarm, with or without nvidia-smi in its image (before, one with
    nvidia-smi was critical: driver.not_loaded); nor is a host whose GPUs are bound to vfio-pci
    for its virtual machines."""
    report = run(node, fault, how, tmp_path, monkeypatch)
    for name in GPU_CHECKS:
        assert result(report, name).status == Status.SKIPPED, said(result(report, name))
    assert report.status == Status.OK, report.headline
