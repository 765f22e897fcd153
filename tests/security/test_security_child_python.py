"""Every Python child sitscheck starts runs isolated: a planted `importlib.py` or `sitscheck/`
in the working directory (a bundle someone sent, `cd`'d into) never runs as the caller, for
each child (the `--load` and `--bandwidth` probes, the TensorRT probe); and the child still
imports what the parent imported (a module found only through the parent's PYTHONPATH), from
`/`, with only the environment a command inherits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from sitscheck.app import installed_evidence
from sitscheck.gpu.identity import GpuRef
from sitscheck.probes.bandwidth import BANDWIDTH_JSON
from sitscheck.sources.command import CommandRunner
from sitscheck.sources.live import LiveOptions, LiveSources


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[str]]:
    """The working directory is a folder holding `importlib.py`, `runpy.py` and `sitscheck/`
    that each record that they ran; returns what ran."""
    ran = tmp_path / "ran"
    folder = tmp_path / "bundle"
    (folder / "sitscheck" / "probes").mkdir(parents=True)
    for name in ("importlib.py", "runpy.py", "sitscheck/__init__.py"):
        note = f"with open({str(ran)!r}, 'a') as out:\n    out.write({name!r} + '\\n')\n"
        (folder / name).write_text(note, encoding="utf-8")
    (folder / "sitscheck" / "probes" / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.chdir(folder)

    def what_ran() -> list[str]:
        return ran.read_text(encoding="utf-8").split() if ran.exists() else []

    return what_ran


def test_the_load_workload_runs_nothing_planted(planted: Callable[[], list[str]]) -> None:
    """`--load`'s children: the soak's declared workload, one per GPU of the recorded node."""
    from fakes.fake_pynvml import FakePynvml, load_recording
    from sitscheck.checks.soak.check import SoakCheck
    from sitscheck.sources.nvml import Nvml
    from sitscheck.workloads.load import start_load

    recording = Path(__file__).resolve().parent.parent / "bundles" / "h200x2-idle-v0"
    nvml = Nvml(FakePynvml(load_recording(recording / "nvml.json")))
    nvml.init()
    load = start_load(nvml, SoakCheck.workload, 0.1, {}, warmup_s=0.0)
    snapshot: dict[str, object] = {"gpus": []}
    load.mark(snapshot)
    load.stop()
    assert planted() == []
    # the workload itself ran: it is at work, or said why it cannot be (no CUDA here)
    states = snapshot["load"]["gpus"]  # type: ignore[index]
    assert [g["state"] for g in states] in (["running"] * 2, ["failed"] * 2), states
    assert all(g["reason"] is None or "cuda" in g["reason"].lower() for g in states), states


def test_the_bandwidth_probe_runs_nothing_planted(
    tmp_path: Path, planted: Callable[[], list[str]]
) -> None:
    marker = tmp_path / "nvidiactl"
    marker.write_text("")
    options = LiveOptions(
        sys_root=str(tmp_path / "sys"),
        sample_seconds=0.0,
        bandwidth_s=5.0,
        driver_markers=(str(marker),),
    )
    sources = LiveSources(
        options, CommandRunner(path=str(tmp_path / "no-bin")), installed=installed_evidence
    )
    try:
        artifact = sources.artifact(BANDWIDTH_JSON)
    finally:
        sources.close()
    assert planted() == []
    assert artifact.text is not None, artifact.reason  # the probe itself ran: its record
    assert json.loads(artifact.text)["format"]


def test_the_tensorrt_probe_runs_nothing_planted(
    tmp_path: Path, planted: Callable[[], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sitscheck.checks.tensorrt import probe
    from trt_helpers import write_fake_package

    fake = write_fake_package(tmp_path / "fake")
    monkeypatch.delitem(sys.modules, "tensorrt", raising=False)
    monkeypatch.syspath_prepend(str(fake))
    monkeypatch.setenv("PYTHONPATH", str(fake))  # where the child's path came from before
    monkeypatch.delenv("SITSCHECK_FAKE_TRT_MODE", raising=False)
    (gpu,) = probe.run_probe([GpuRef(0, "a", "NVIDIA H200")], 60.0).gpus
    assert planted() == []
    assert (gpu.status, gpu.reason) == ("built", None)  # the probe itself ran


PARENT = """
import json, os, sys
from sitscheck.sources import child_python
done = child_python.run("found_only_through_pythonpath", ("an", "argument"), 60.0)
print(json.dumps({"stdout": done.stdout, "stderr": done.stderr, "code": done.returncode}))
"""
CHILD = """
import json, os, sys
print(json.dumps({
    "argv": sys.argv[1:],
    "isolated": sys.flags.isolated,
    "cwd": os.getcwd(),
    "path": sys.path,
    "secret": os.environ.get("OTEL_EXPORTER_OTLP_HEADERS"),
    "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
}))
"""


def test_a_child_finds_what_the_parent_found_through_pythonpath_isolated(
    tmp_path: Path, planted: Callable[[], list[str]]
) -> None:
    """A plugin's module that the parent finds only through PYTHONPATH runs in the child
    (which `-I` alone would lose), from `/`, isolated, without the parent's secrets and
    without the working directory on its path."""
    plugins, parent_script = tmp_path / "plugins", tmp_path / "parent" / "parent.py"
    plugins.mkdir()
    (plugins / "found_only_through_pythonpath.py").write_text(CHILD, encoding="utf-8")
    parent_script.parent.mkdir()
    parent_script.write_text(PARENT, encoding="utf-8")  # run by path, as a console script is
    env = {
        **os.environ,
        "PYTHONPATH": str(plugins),
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer secret",
        "CUDA_VISIBLE_DEVICES": "GPU-1",
    }
    done = subprocess.run(
        [sys.executable, str(parent_script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    parent = json.loads(done.stdout)
    assert parent["code"] == 0, parent["stderr"]
    child = json.loads(parent["stdout"])
    assert child["argv"] == ["an", "argument"]
    assert child["isolated"] == 1 and child["cwd"] == "/"
    assert str(plugins) in child["path"] and "" not in child["path"]
    assert not any(entry.startswith(str(tmp_path / "bundle")) for entry in child["path"])
    assert child["secret"] is None and child["cuda"] == "GPU-1"
    assert planted() == []
