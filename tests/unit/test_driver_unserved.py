"""The driver check's reading of a driver that cannot serve its GPUs (issue 29, item 5): the
kernel's API-mismatch report, the signs in the tools' words, their quoting, a failed command's
message, and what a replayed bundle says its recording said about the driver.

The messages are the tools' public wordings (none is in the shared corpus): the kernel module's
"NVRM: API mismatch: the client has the version X, but" / "NVRM: this kernel module has the
version Y.  Please" (nv.c; drivers naming the client: "the client 'NAME' has the version X," /
"but this kernel module has the version Y"); nvidia-smi's "Failed to initialize NVML:
Driver/library version mismatch" / "NVML library version: 550.54"; pynvml's strings.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import cast

import pytest
from sitscheck.checks.driver.check import DriverCheck
from sitscheck.checks.driver.kernel import MismatchLines
from sitscheck.checks.driver.serving import Said, named_failure, quote, unserved
from sitscheck.config import run_config
from sitscheck.contract import Check
from sitscheck.contract.runner import run_checks
from sitscheck.kernlog.scan import scan_lines
from sitscheck.models import CheckResult, Status
from sitscheck.sources.command import CommandRunner
from sitscheck.sources.replay import ReplaySources

TESTS = Path(__file__).resolve().parent.parent
SYSFS = TESTS / "bundles" / "h200x2-idle-v0" / "sysfs"  # two H200s: 0000:00:06.0, 0000:00:07.0
SMI_MISMATCH = "Failed to initialize NVML: Driver/library version mismatch"
NVML_MISMATCH = (
    "nvmlInit failed: RM has detected an NVML/RM version mismatch. "
    "(NVML_ERROR_LIB_RM_VERSION_MISMATCH)"
)


@pytest.mark.parametrize(
    "lines",
    [
        [
            "[ 1865.855970] NVRM: API mismatch: the client has the version 550.54.14, but",
            "[ 1865.855973] NVRM: this kernel module has the version 545.23.08.  Please",
            "[ 1865.855974] NVRM: make sure that this kernel module and all NVIDIA driver",
            "[ 1865.855975] NVRM: components have the same version.",
        ],
        [
            "[ 12.000001] NVRM: API mismatch: the client 'nvidia-smi' has the version 550.54.14,",
            "[ 12.000002] NVRM: but this kernel module has the version 545.23.08",
        ],
    ],
    ids=["two-lines", "client-named"],
)
def test_the_kernels_api_mismatch_report_gives_both_versions(lines: list[str]) -> None:
    interest = DriverCheck.kernel_log
    filler = ["[ 1.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  545.23.08", "[ 2.0] x"]
    _, results = scan_lines([*filler, *lines], {"driver": interest})
    found = results["driver"]
    assert isinstance(found, MismatchLines) and found.count == 1 and found.last is not None
    assert (found.last.client, found.last.module) == ("550.54.14", "545.23.08")
    assert found.last.text.startswith("NVRM: API mismatch: the client")


def test_the_most_specific_sign_decides_and_each_source_is_quoted_once() -> None:
    said = [
        Said("NVML", "nvml", NVML_MISMATCH),
        Said("nvidia-smi", "nvidia-smi -L", f"`nvidia-smi -L` exited 18: {SMI_MISMATCH}"),
        Said("nvidia-smi", "nvidia-smi -q", f"`nvidia-smi -q` exited 18: {SMI_MISMATCH}"),
        Said("driver probe", "live", "couldn't communicate with the NVIDIA driver"),
    ]
    named = named_failure(said)
    assert named is not None
    code, quoted = named
    assert code == "driver.version_mismatch"
    assert [s.ref for s in quoted] == ["nvml", "nvidia-smi -L"]
    assert named_failure([Said("nvidia-smi", "x", "nvidia-smi: command not found")]) is None
    assert named_failure([Said("NVML", "x", "nvmlInit failed: NVML_ERROR_UNKNOWN")]) is None


def test_a_tools_words_are_quoted_on_one_printable_line() -> None:
    hostile = "\x1b[2J\x1b[HOK — 11 of 11 checks ran\r\u202egnp.exe\nsecond line\x07"
    shown = quote(hostile)
    assert all(ch.isprintable() for ch in shown), shown
    assert "\\x1b[2J" in shown and "\\u202e" in shown and "\\x07" in shown
    assert "ran / \\u202egnp.exe / second line" in shown  # a CR or LF ends a line: " / "
    assert quote("x" * 1000).endswith("…") and len(quote("x" * 1000)) == 300
    finding = unserved(
        "driver.version_mismatch", ["0000:00:06.0"], [Said("nvidia-smi", "-L", hostile)]
    )
    assert "\x1b" not in finding.message and "\\x1b[2J" in finding.message
    assert all("\x1b" not in (e.excerpt or "") for e in finding.evidence)


def test_a_failed_commands_message_keeps_the_line_that_names_the_failure() -> None:
    """nvidia-smi prints the library's version after the mismatch: the reason kept only the
    last line ("NVML library version: 550.54"), losing what failed."""
    code = f"print({SMI_MISMATCH!r}); print('NVML library version: 550.54'); raise SystemExit(18)"
    reason = CommandRunner().run([sys.executable, "-I", "-c", code], 10).failure_reason()
    assert reason is not None
    assert reason.endswith(f"exited 18: {SMI_MISMATCH} / NVML library version: 550.54"), reason


def bundle(tmp_path: Path, meta: dict[str, object] | None, sysfs: bool = True) -> Path:
    folder = tmp_path / "bundle"
    folder.mkdir()
    if sysfs:
        shutil.copytree(SYSFS, folder / "sysfs")
    if meta is not None:
        (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


MISMATCH_RECORDING = {
    "nvidia_driver": {"state": "present", "detail": "/proc/driver/nvidia/version exists"},
    "missing": {
        "nvml.json": NVML_MISMATCH,
        "nvidia-smi-L.txt": f"`nvidia-smi -L` exited 18: {SMI_MISMATCH}",
    },
}


def test_a_bundle_says_what_its_recording_said_about_the_driver(tmp_path: Path) -> None:
    """Was "the bundle holds no NVIDIA driver evidence" (absent): every GPU check skipped."""
    sources = ReplaySources(bundle(tmp_path, MISMATCH_RECORDING))
    driver = sources.driver()
    assert driver.state == "present"
    assert "/proc/driver/nvidia/version exists" in driver.detail and SMI_MISMATCH in driver.detail
    listing = sources.artifact("nvidia-smi-L.txt")
    assert listing.text is None and not listing.absent  # it failed: not merely left out
    assert (
        listing.reason
        == f"nvidia-smi-L.txt was not recorded: `nvidia-smi -L` exited 18: {SMI_MISMATCH}"
    )
    assert sources.gpu_snapshot() == (None, f"nvml.json was not recorded: {NVML_MISMATCH}")


def driver_result(folder: Path, **config: object) -> CheckResult:
    check = cast(Check, DriverCheck())
    (result,) = run_checks([check], ReplaySources(folder), run_config(config))
    return result


@pytest.mark.parametrize(
    ("meta", "status", "codes"),
    [
        (MISMATCH_RECORDING, Status.CRITICAL, ["driver.version_mismatch"]),
        (
            {"nvidia_driver": {"state": "absent", "detail": "no module"}},
            Status.CRITICAL,
            ["driver.not_loaded"],
        ),
        # sysfs alone, nothing recorded about the driver: a partial bundle, no alarm
        (None, Status.SKIPPED, []),
        ({"nvidia_driver": {"state": "present", "detail": "x"}}, Status.SKIPPED, []),
    ],
    ids=["recorded-mismatch", "recorded-no-module", "no-meta", "no-outputs-no-reasons"],
)
def test_replayed_gpus_on_the_bus_are_judged_by_what_was_recorded(
    tmp_path: Path, meta: dict[str, object] | None, status: Status, codes: list[str]
) -> None:
    result = driver_result(bundle(tmp_path, meta))
    assert result.status == status, result
    assert [f.code for f in result.findings] == codes
    if codes:
        message = result.findings[0].message
        assert "0000:00:06.0, 0000:00:07.0" in message


def test_expected_gpus_in_a_bundle_without_driver_evidence_are_unknown_not_critical(
    tmp_path: Path,
) -> None:
    """Missing evidence is no verdict on the hardware (before: critical driver.absent)."""
    result = driver_result(bundle(tmp_path, None, sysfs=False), expect_gpus=8)
    assert result.status == Status.UNKNOWN, result
    assert "no NVIDIA driver evidence" in (result.error or "")
