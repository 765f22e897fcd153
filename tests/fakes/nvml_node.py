"""Live sources of a node whose NVML is a fake (`FakePynvml`): the driver marker there, no
command on the PATH, sysfs an empty folder, a short sampling window."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from sitscheck.app import installed_evidence
from sitscheck.contract import NvmlRead
from sitscheck.sources.command import CommandRunner
from sitscheck.sources.live import LiveOptions, LiveSources
from sitscheck.sources.nvml import Nvml

from .fake_pynvml import FakePynvml


def fake_nvml_sources(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    fake: FakePynvml,
    nvml_reads: Mapping[str, NvmlRead] | None = None,
) -> LiveSources:
    """`nvml_reads`: the NVML calls the run's checks declare (None: every installed check's)."""
    marker = tmp_path / "nvidiactl"
    marker.touch()
    (tmp_path / "bin").mkdir(exist_ok=True)
    monkeypatch.setattr(
        Nvml, "load", classmethod(lambda cls, deadline_s=5.0: cls(fake, deadline_s))
    )
    options = LiveOptions(
        driver_markers=(str(marker),),
        sample_seconds=0.2,
        sample_interval_s=0.1,
        sys_root=str(tmp_path / "sys"),
        command_timeout_s=2.0,
    )
    runner = CommandRunner(path=str(tmp_path / "bin"))
    return LiveSources(options, runner, nvml_reads=nvml_reads, installed=installed_evidence)
