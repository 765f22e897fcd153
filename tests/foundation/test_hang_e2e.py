"""A hung `nvidia-smi` on a node without NVML: the driver check is UNKNOWN after the command's
own 1 s timeout, and the hung process group is gone afterwards."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from fakes.commands import hanging_command
from fakes.procs import read_pids, still_running
from sitscheck.app import installed_evidence
from sitscheck.checks.driver.check import DriverCheck
from sitscheck.config import run_config
from sitscheck.contract import Check
from sitscheck.contract.registry import BrokenCheck
from sitscheck.contract.runner import run_checks
from sitscheck.models import Status
from sitscheck.sources.command import CommandRunner
from sitscheck.sources.live import LiveOptions, LiveSources
from sitscheck.sources.nvml import Nvml, NvmlUnavailable


def driver_check() -> Check | BrokenCheck:
    # DriverCheck's `metrics` is inferred as tuple[MetricSpec] (one item), which mypy does not
    # accept for the protocol's tuple[MetricSpec, ...]; at run time it is a Check.
    return cast(Check, DriverCheck())


def no_nvml(cls: type[Nvml], deadline_s: float = 5.0) -> Nvml:
    raise NvmlUnavailable("pynvml cannot be imported: test", no_driver=False)


def test_hung_nvidia_smi_makes_the_driver_check_unknown(
    tmp_path: Path, pidfile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Nvml, "load", classmethod(no_nvml))
    marker = tmp_path / "version"
    marker.write_text("NVRM version: fake\n")
    hanging_command(tmp_path / "bin", "nvidia-smi", pidfile, ignore_term=True)
    sources = LiveSources(
        LiveOptions(driver_markers=(str(marker),), command_timeout_s=1, sys_root=str(tmp_path)),
        CommandRunner(path=str(tmp_path / "bin")),
        installed=installed_evidence,
    )
    try:
        (result,) = run_checks(
            [driver_check()],
            sources,
            run_config({"check_timeout_s": 15, "run_timeout_s": 20}),
        )
    finally:
        sources.close()

    assert result.name == "driver"
    assert result.status == Status.UNKNOWN
    assert result.error is not None
    assert "`nvidia-smi -L` did not answer within 1 s; killed" in result.error
    assert "NVML" in result.error  # why it fell back to nvidia-smi at all
    # (its own 1 s, not the check's 15 s deadline: that would read "no result within ...")
    pids = read_pids(pidfile)
    assert len(pids) >= 2, "the fake nvidia-smi never started"
    assert still_running(pids) == []
