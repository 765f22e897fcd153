"""`--trt-probe`: without tensorrt it is not judged, with the reason; with a fake `tensorrt` the
logger's lines reach the scanner, in-process and through real child processes."""

from __future__ import annotations

import io
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from sitscheck.checks.tensorrt import probe
from sitscheck.checks.tensorrt.check import TensorrtCheck
from sitscheck.checks.tensorrt.parse import scan_trt_log
from sitscheck.config import RunConfig
from sitscheck.gpu.identity import GpuRef
from sitscheck.sources import child_python
from sitscheck.sources.command import CommandResult
from sitscheck.sources.replay import ReplaySources
from trt_helpers import (
    H200_BUILD,
    LiveLikeSources,
    codes,
    collect,
    fake_tensorrt,
    make_bundle,
    write_fake_package,
)

UUIDS = {
    0: "GPU-3d593023-41d0-bcb0-fd5b-7849b655a02f",
    1: "GPU-9f23e032-f1a8-da44-56dc-43ccc4c4bdba",
}
FALLBACK = "Layer probe_relu: fallback to cuBLASLt due to unsupported dilation=2 on SM_90."
WORKSPACE = "Some tactics do not have sufficient workspace memory to run."


@pytest.fixture
def no_tensorrt(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import tensorrt` fails here, whatever is installed."""
    monkeypatch.setitem(sys.modules, "tensorrt", None)


@pytest.fixture
def fake_trt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tensorrt", fake_tensorrt())
    monkeypatch.delenv("SITSCHECK_FAKE_TRT_MODE", raising=False)


def in_process_spawn(
    calls: list[Mapping[str, str]], mode: Mapping[str, str] | None = None
) -> probe.Spawn:
    """Runs the child's `main` here (the fake is in sys.modules), as the runner would."""

    def spawn(module: str, env: Mapping[str, str], timeout: float) -> CommandResult:
        assert module == "sitscheck.checks.tensorrt.probe"
        assert timeout > 0
        calls.append(dict(env))
        wanted = (mode or {}).get(env["CUDA_VISIBLE_DEVICES"], "ok")
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SITSCHECK_FAKE_TRT_MODE", wanted)
            out = io.StringIO()
            code = probe.main([], out)
        return CommandResult(tuple(child_python.argv(module)), code, out.getvalue(), "", 0.01)

    return spawn


# --------------------------------------------------------------------------- without tensorrt


@pytest.mark.usefixtures("no_tensorrt")
def test_without_tensorrt_the_probe_is_not_judged_with_the_reason(tmp_path: Path) -> None:
    assert probe.tensorrt_missing() == probe.NOT_INSTALLED
    bundle = make_bundle(tmp_path, {"h200.log": H200_BUILD})
    calls: list[Mapping[str, str]] = []
    out = collect(LiveLikeSources(bundle), RunConfig(trt_probe=True), in_process_spawn(calls))
    assert calls == []  # no child was started
    assert out.facts["probe"] == {
        "status": "skipped",
        "reason": "tensorrt is not installed (pip install sitscheck[tensorrt])",
        "gpus": [],
    }
    assert out.not_judged == [
        "TensorRT probe: tensorrt is not installed (pip install sitscheck[tensorrt])"
    ]
    assert out.findings == [] and out.error is None
    assert [g["probe_built"] for g in out.facts["gpus"]] == [None, None]


@pytest.mark.usefixtures("no_tensorrt")
def test_without_tensorrt_the_reason_is_the_install_hint_even_without_a_driver(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "bare"
    (folder / "tensorrt").mkdir(parents=True)
    (folder / "tensorrt" / "h200.log").write_text(H200_BUILD, encoding="utf-8")
    sources = LiveLikeSources(folder)
    assert sources.driver().state == "unknown"  # nothing shows a driver
    out = collect(sources, RunConfig(trt_probe=True))
    assert out.facts["probe"]["reason"] == probe.NOT_INSTALLED
    assert out.facts["gpus"] == []


@pytest.mark.usefixtures("fake_trt")
def test_no_driver_no_probe(tmp_path: Path) -> None:
    folder = tmp_path / "bare"
    (folder / "tensorrt").mkdir(parents=True)
    (folder / "tensorrt" / "h200.log").write_text(H200_BUILD, encoding="utf-8")
    calls: list[Mapping[str, str]] = []
    out = collect(LiveLikeSources(folder), RunConfig(trt_probe=True), in_process_spawn(calls))
    assert calls == []
    assert out.facts["probe"]["reason"].startswith("no NVIDIA driver to build on: ")


@pytest.mark.usefixtures("no_tensorrt")
def test_without_tensorrt_or_logs_the_check_is_skipped_with_the_reason(tmp_path: Path) -> None:
    sources = LiveLikeSources(make_bundle(tmp_path, {}))
    reason = TensorrtCheck().applicable(sources, RunConfig(trt_probe=True))
    assert reason == (
        "no TensorRT build logs (--trt-log PATH); the probe cannot run: "
        "tensorrt is not installed (pip install sitscheck[tensorrt])"
    )


@pytest.mark.usefixtures("no_tensorrt")
def test_the_child_without_tensorrt_exits_with_its_own_code() -> None:
    out = io.StringIO()
    assert probe.main([], out) == probe.EXIT_NO_TENSORRT
    assert out.getvalue() == ""


def test_the_probe_is_off_unless_asked(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {"h200.log": H200_BUILD})
    calls: list[Mapping[str, str]] = []
    out = collect(LiveLikeSources(bundle), RunConfig(), in_process_spawn(calls))
    assert calls == [] and out.facts["probe"] is None and out.not_judged == []


@pytest.mark.usefixtures("fake_trt")
def test_replaying_a_bundle_never_probes(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {"h200.log": H200_BUILD})
    calls: list[Mapping[str, str]] = []
    out = collect(ReplaySources(bundle), RunConfig(trt_probe=True), in_process_spawn(calls))
    assert calls == []
    assert out.facts["probe"]["status"] == "skipped"
    assert out.not_judged == [
        "TensorRT probe: the probe builds on live GPUs; it does not run when replaying a bundle"
    ]


# --------------------------------------------------------------------------- with a fake


@pytest.mark.usefixtures("fake_trt")
def test_logger_lines_reach_the_parser() -> None:
    assert probe.tensorrt_missing() is None
    lines: list[str] = []
    assert probe.build_engine(sys.modules["tensorrt"], lines.append) is True
    # trtexec's form: tagged first lines, the continuation of a multi-line message untagged.
    assert any(line.endswith(f"] [W] [TRT] {FALLBACK}") for line in lines)
    assert "Increasing workspace size will enable more tactics, please check verbose output." in (
        lines
    )
    assert not any("verbose chatter" in line for line in lines)
    log = scan_trt_log(lines, "probe")
    assert log.trt_version == "10.8.0"
    assert [(f.layer, f.reason) for f in log.fallbacks] == [
        ("probe_relu", FALLBACK),
        (None, WORKSPACE),
    ]
    assert log.warnings == 2
    assert log.errors == ()
    assert log.peak_memory_mib == 537.0


@pytest.mark.parametrize(("version", "flags"), [("10.8.0.43", 0), ("8.6.1.6", 1)])
def test_explicit_batch_only_before_tensorrt_10(
    monkeypatch: pytest.MonkeyPatch, version: str, flags: int
) -> None:
    fake = fake_tensorrt()
    fake.__version__ = version
    monkeypatch.setitem(sys.modules, "tensorrt", fake)
    lines: list[str] = []
    assert probe.build_engine(fake, lines.append) is True
    assert fake.created == {"flags": flags}
    assert scan_trt_log(lines, "p").trt_version == ".".join(version.split(".")[:3])


@pytest.mark.usefixtures("fake_trt")
def test_child_main_prints_a_log_the_scanner_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    assert probe.main([], out) == probe.EXIT_BUILT
    text = out.getvalue()
    assert text.splitlines()[-1] == probe.PASSED_LINE
    assert "] [I] [TRT] Engine built: 4242 bytes" in text
    monkeypatch.setenv("SITSCHECK_FAKE_TRT_MODE", "fail")
    failed = io.StringIO()
    assert probe.main([], failed) == probe.EXIT_FAILED
    log = scan_trt_log(failed.getvalue().splitlines(), "probe")
    assert log.errors == (
        "10: Could not find any implementation for node probe_relu.",
        "Build serialized network failed.",
        probe.FAILED_LINE,
    )
    monkeypatch.setenv("SITSCHECK_FAKE_TRT_MODE", "raise")
    raised = io.StringIO()
    assert probe.main([], raised) == probe.EXIT_FAILED
    assert scan_trt_log(raised.getvalue().splitlines(), "p").errors[0] == (
        "TensorRT probe failed: RuntimeError: CUDA initialization failure with error: 999"
    )


@pytest.mark.usefixtures("fake_trt")
def test_the_check_probes_every_gpu_with_its_own_device(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {"h200.log": H200_BUILD})
    calls: list[Mapping[str, str]] = []
    spawn = in_process_spawn(calls, mode={UUIDS[1]: "fail"})
    out = collect(LiveLikeSources(bundle), RunConfig(trt_probe=True), spawn)
    assert sorted(call["CUDA_VISIBLE_DEVICES"] for call in calls) == sorted(UUIDS.values())
    assert all(call["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID" for call in calls)
    assert codes(out) == [("tensorrt.probe_failed", "critical", 1)]
    assert out.findings[0].device is not None
    assert out.findings[0].device.pci_bus_id == "0000:00:07.0"
    assert "10: Could not find any implementation for node probe_relu." in out.findings[0].message
    facts = out.facts["probe"]
    assert facts["status"] == "ran" and facts["reason"] is None
    assert [(g["index"], g["status"]) for g in facts["gpus"]] == [(0, "built"), (1, "failed")]
    built = facts["gpus"][0]["log"]
    assert built["file"] == "probe/gpu0"
    assert built["fallbacks"] == [
        {"layer": "probe_relu", "reason": FALLBACK},
        {"layer": None, "reason": WORKSPACE},
    ]
    assert built["trt_version"] == "10.8.0"
    assert [g["probe_built"] for g in out.facts["gpus"]] == [True, False]
    # The probe's fallbacks are its own: the logs' counts do not include them.
    assert [g["fallbacks"] for g in out.facts["gpus"]] == [0, 0]


@pytest.mark.usefixtures("fake_trt")
def test_the_probe_alone_runs_the_check(tmp_path: Path) -> None:
    sources = LiveLikeSources(make_bundle(tmp_path, {}))
    assert TensorrtCheck().applicable(sources, RunConfig(trt_probe=True)) is None
    calls: list[Mapping[str, str]] = []
    out = collect(sources, RunConfig(trt_probe=True), in_process_spawn(calls))
    assert out.error is None and out.findings == []
    assert out.facts["logs"] == []
    assert [g["status"] for g in out.facts["probe"]["gpus"]] == ["built", "built"]


def test_index_when_no_uuid_is_known() -> None:
    env = probe.child_env(GpuRef(3, None, "x"), None)
    assert env["CUDA_VISIBLE_DEVICES"] == "3" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"


# --------------------------------------------------------------------------- real children


@pytest.fixture
def fake_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake as a package the parent can find, so the child processes import it (they get
    the parent's import path)."""
    folder = write_fake_package(tmp_path / "fake")
    monkeypatch.delitem(sys.modules, "tensorrt", raising=False)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delenv("SITSCHECK_FAKE_TRT_MODE", raising=False)


@pytest.mark.usefixtures("fake_on_path")
def test_child_processes_build_and_report() -> None:
    gpus = [GpuRef(0, "a", "NVIDIA H200"), GpuRef(1, "b", "NVIDIA H200")]
    outcome = probe.run_probe(gpus, 60.0, uuids=UUIDS)
    assert outcome.ran
    assert [(g.index, g.status, g.reason) for g in outcome.gpus] == [
        (0, "built", None),
        (1, "built", None),
    ]
    assert [f.reason for f in outcome.gpus[0].log.fallbacks] == [FALLBACK, WORKSPACE]


@pytest.mark.usefixtures("fake_on_path")
def test_a_hung_child_is_killed_at_the_deadline_with_its_log_so_far(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SITSCHECK_FAKE_TRT_MODE", "hang")
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # the child flushes each line itself
    (gpu,) = probe.run_probe([GpuRef(0, "a", "NVIDIA H200")], 3.0).gpus
    assert gpu.status == "timed_out"
    assert gpu.reason == "no engine within 3.0s (killed)"
    assert gpu.duration_s < 10
    assert gpu.log.peak_memory_mib == 537.0  # the line logged before it hung
    judged = probe.ProbeOutcome(True, None, (gpu,)).to_fact()
    assert judged["gpus"][0]["status"] == "timed_out"


def test_a_child_that_cannot_import_tensorrt_is_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent finds the package (it does not import it); the child's import fails, as it
    does where a library the package loads is missing."""
    package = tmp_path / "broken" / "tensorrt"
    package.mkdir(parents=True)
    missing = "libnvinfer.so.10: cannot open shared object file: No such file or directory"
    (package / "__init__.py").write_text(f"raise ImportError({missing!r})\n", encoding="utf-8")
    monkeypatch.delitem(sys.modules, "tensorrt", raising=False)
    monkeypatch.syspath_prepend(str(package.parent))
    (gpu,) = probe.run_probe([GpuRef(0, "a", "NVIDIA H200")], 60.0).gpus
    assert gpu.status == "not_run"
    assert gpu.reason is not None and gpu.reason.startswith("tensorrt could not be imported: ")
