"""NVML calls a check declares (`NvmlRead` in its `EvidenceSpec.nvml_reads`): what the contract
accepts, how the live snapshot makes them (every GPU, under the NVML deadline, each outcome
kept apart: a value, not supported, an error, a timeout, a lost GPU), how a check reads them
back (`ctx.nvml_readings()`, live and from a bundle), and the built-in reading that moved to
the path (the driver check's persistence mode: read only when a check that declares it runs).

The node is the recorded 2×H200 one (tests/bundles/h200x2-idle-v0), its NVML faked."""

from __future__ import annotations

import ctypes
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pynvml
import pytest
from fakes.fake_pynvml import FakePynvml, load_recording
from fakes.nvml_node import fake_nvml_sources
from sitscheck.checks.driver.check import DriverCheck
from sitscheck.checks.gpu_telemetry.check import GpuTelemetryCheck
from sitscheck.config import RunConfig
from sitscheck.contract import (
    BaseCheck,
    Check,
    CheckContext,
    CheckOutput,
    EvidenceSpec,
    NvmlRead,
    nvml_reads_skip,
    registry,
)
from sitscheck.contract.declarations import SNAPSHOT_KEYS, nvml_read_problems
from sitscheck.contract.evidence import gather
from sitscheck.contract.registry import BrokenCheck
from sitscheck.contract.runner import run_checks
from sitscheck.errors import ConfigError
from sitscheck.models import Status
from sitscheck.sources.gpu_snapshot import collect_snapshot
from sitscheck.sources.live import LiveSources
from sitscheck.sources.nvml import Nvml
from sitscheck.sources.nvml_reads import plain
from sitscheck.sources.replay import ReplaySources

NODE = Path(__file__).resolve().parents[1] / "bundles" / "h200x2-idle-v0"
PSTATE = NvmlRead("perf_state", "nvmlDeviceGetPerformanceState", summary="P-state")
COUNT = NvmlRead("encoder_sessions", "nvmlDeviceGetEncoderSessions")
PSTATES = (0, 8)  # what the fake answers for GPU 0 and GPU 1


class PerfStateCheck(BaseCheck):
    """A check that reads one declared value, and hands back what `ctx.nvml_readings()` gave."""

    name = "perf_state"
    summary = "the GPUs' performance state"
    needs_gpu = True
    evidence = EvidenceSpec(nvml_reads=(PSTATE,))

    def collect(self, ctx: CheckContext) -> CheckOutput:
        readings = ctx.nvml_readings()
        if readings.problem is not None:
            return CheckOutput(error=readings.problem)
        gpus = []
        for gpu in readings.gpus:
            value = gpu.reading(PSTATE.key)
            gpus.append(
                {
                    "index": gpu.index,
                    "pci_bus_id": gpu.pci_bus_id,
                    "state": value.state,
                    "value": value.value,
                    "why": None if value.ok else value.why(),
                    "lost": gpu.lost,
                }
            )
        return CheckOutput(facts={"source": readings.ref, "gpus": gpus})


class UndeclaredRead(PerfStateCheck):
    name = "undeclared"

    def collect(self, ctx: CheckContext) -> CheckOutput:
        ctx.nvml_readings().gpus[0].reading(COUNT.key)
        return CheckOutput()


def node_recording() -> dict[str, Any]:
    data = load_recording(NODE / "nvml.json")
    for gpu, pstate in zip(data["gpus"], PSTATES, strict=True):
        gpu[PSTATE.key] = pstate
    return data


@pytest.fixture
def fake() -> Iterator[FakePynvml]:
    made = FakePynvml(node_recording(), declared={PSTATE.function: PSTATE.key})
    yield made
    made.release()


def snapshot(fake: FakePynvml, *reads: NvmlRead, deadline_s: float = 2.0) -> dict[str, Any]:
    nvml = Nvml(fake, deadline_s)
    nvml.init()
    return collect_snapshot(nvml, window_s=0.2, interval_s=0.1, reads=reads)


def live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakePynvml, *checks: Any
) -> LiveSources:
    """The node live, serving the NVML calls `checks` declare."""
    return fake_nvml_sources(tmp_path, monkeypatch, fake, gather(checks).nvml_reads)


def run_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakePynvml, *checks: Any
) -> list[Any]:
    sources = live(tmp_path, monkeypatch, fake, *checks)
    try:
        return run_checks(list(checks), sources, RunConfig())
    finally:
        sources.close()


# ---- the declaration -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("read", "problem"),
    [
        (NvmlRead("name", "nvmlDeviceGetName"), "sitscheck's own snapshot writes 'name'"),
        (NvmlRead("memory", "nvmlDeviceGetMemoryInfo"), "sitscheck's own snapshot writes"),
        (NvmlRead("Perf-State", "nvmlDeviceGetPerformanceState"), "its key is no record key"),
        (NvmlRead("pm", "nvmlDeviceSetPersistenceMode", ("handle", 1)), "not an NVML device query"),
        (NvmlRead("pm", "nvmlShutdown"), "not an NVML device query"),
        (NvmlRead("clock", "nvmlDeviceGetClockInfo", (1,)), "the handle among them"),
        (NvmlRead("clock", "nvmlDeviceGetClockInfo", ("handle", True)), "the handle among them"),
        (NvmlRead("clock", "nvmlDeviceGetClockInfo", ("handle", "sm")), "the handle among them"),
    ],
)
def test_a_declaration_the_contract_refuses_makes_the_plugin_broken(
    read: NvmlRead, problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Refused(PerfStateCheck):
        evidence = EvidenceSpec(nvml_reads=(read,))

    (said,) = nvml_read_problems(Refused)
    assert problem in said
    loaded = _discovered(monkeypatch, Refused)
    assert isinstance(loaded, BrokenCheck)
    assert loaded.error == f"plugin tests:Refused declares {said}"
    assert gather([loaded]).nvml_reads == {}  # it declares nothing: its calls are never made


def test_a_key_declared_twice_or_no_read_at_all_is_refused() -> None:
    class Twice(PerfStateCheck):
        evidence = EvidenceSpec(
            nvml_reads=(PSTATE, NvmlRead(PSTATE.key, "nvmlDeviceGetPowerState"))
        )

    class Garbled(PerfStateCheck):
        evidence = EvidenceSpec(nvml_reads=(("perf_state", "nvmlDeviceGetPerformanceState"),))  # type: ignore[arg-type]

    assert nvml_read_problems(Twice) == [
        "NVML read 'perf_state' (nvmlDeviceGetPowerState): 'perf_state' declared twice"
    ]
    assert nvml_read_problems(Garbled) == ["an NVML read that is no NvmlRead: tuple"]


def test_the_checks_that_ship_declare_what_the_contract_accepts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert nvml_read_problems(DriverCheck) == []
    assert isinstance(_discovered(monkeypatch, DriverCheck), DriverCheck)


def test_two_checks_share_one_call_and_may_not_read_one_key_differently() -> None:
    class Same(PerfStateCheck):
        name = "same"

    class Other(PerfStateCheck):
        name = "other"
        evidence = EvidenceSpec(nvml_reads=(NvmlRead(PSTATE.key, "nvmlDeviceGetPowerState"),))

    declared = gather([PerfStateCheck(), Same()])
    assert declared.nvml and declared.nvml_reads == {PSTATE.key: PSTATE}
    with pytest.raises(ConfigError) as refused:
        gather([PerfStateCheck(), Other()])
    assert str(refused.value) == (
        "checks perf_state and other declare perf_state with different NVML calls "
        "(nvmlDeviceGetPerformanceState(handle) / nvmlDeviceGetPowerState(handle))"
    )


# ---- the live snapshot -------------------------------------------------------------------------


def test_every_gpu_gets_the_declared_call_and_its_value_in_its_record(fake: FakePynvml) -> None:
    gpus = snapshot(fake, PSTATE)["gpus"]
    assert [g[PSTATE.key] for g in gpus] == list(PSTATES)
    assert all(PSTATE.key not in g["unavailable"] for g in gpus)
    assert sorted(c.gpu for c in fake.calls_to(PSTATE.function)) == [0, 1]  # once a GPU


def test_no_declaration_no_call(fake: FakePynvml) -> None:
    gpus = snapshot(fake)["gpus"]
    assert fake.calls_to(PSTATE.function) == []
    assert all(PSTATE.key not in g and PSTATE.key not in g["unavailable"] for g in gpus)


def test_a_call_the_binding_lacks_is_not_supported_never_zero(fake: FakePynvml) -> None:
    gpus = snapshot(fake, COUNT)["gpus"]
    for gpu in gpus:
        assert gpu[COUNT.key] is None
        assert gpu["unavailable"][COUNT.key] == "not_supported"
        assert COUNT.key not in gpu["failures"]  # not supported is not a failure


def test_a_call_that_fails_is_an_error_naming_it(fake: FakePynvml) -> None:
    fake.recording["gpus"][1]["unavailable"][PSTATE.key] = "error"
    gpus = snapshot(fake, PSTATE)["gpus"]
    assert gpus[0][PSTATE.key] == 0
    assert gpus[1][PSTATE.key] is None
    assert gpus[1]["unavailable"][PSTATE.key] == "error"
    assert gpus[1]["failures"][PSTATE.key].startswith("nvmlDeviceGetPerformanceState(handle): ")


def test_a_call_that_hangs_ends_at_its_deadline_as_a_timeout(fake: FakePynvml) -> None:
    fake.block(PSTATE.function, gpu=1)
    gpus = snapshot(fake, PSTATE, deadline_s=0.3)["gpus"]
    assert gpus[1]["unavailable"][PSTATE.key] == "timeout"
    assert "nvmlDeviceGetPerformanceState(handle) did not return" in gpus[1]["failures"][PSTATE.key]
    assert gpus[1][PSTATE.key] is None


def test_a_gpu_lost_before_the_call_says_so(fake: FakePynvml) -> None:
    fake.lose_gpu(1, from_call=5)
    gpus = snapshot(fake, PSTATE)["gpus"]
    assert gpus[0][PSTATE.key] == 0
    assert gpus[1]["unavailable"][PSTATE.key] == "gpu_lost"
    assert gpus[1][PSTATE.key] is None


def test_a_value_with_no_plain_form_is_an_error_not_a_value(fake: FakePynvml) -> None:
    fake.recording["gpus"][0][PSTATE.key] = object()
    gpus = snapshot(fake, PSTATE)["gpus"]
    assert gpus[0][PSTATE.key] is None
    assert gpus[0]["unavailable"][PSTATE.key] == "error"
    assert gpus[0]["failures"][PSTATE.key] == (
        "nvmlDeviceGetPerformanceState: answered a object, which has no plain form: not recorded"
    )
    assert gpus[1][PSTATE.key] == 8


def test_nvmls_structs_arrays_and_bytes_are_kept_as_plain_data() -> None:
    bar1 = pynvml.c_nvmlBAR1Memory_t()
    bar1.bar1Total, bar1.bar1Free, bar1.bar1Used = 256 << 20, 250 << 20, 6 << 20
    assert plain(bar1) == {"bar1Total": 256 << 20, "bar1Free": 250 << 20, "bar1Used": 6 << 20}
    assert plain((ctypes.c_uint * 3)(1, 2, 3)) == [1, 2, 3]
    assert plain([b"GPU-1", (1, None, 2.5)]) == ["GPU-1", [1, None, 2.5]]
    assert json.loads(json.dumps(plain(bar1))) == plain(bar1)


def test_every_key_the_snapshot_writes_is_one_a_declaration_may_not_take(
    fake: FakePynvml,
) -> None:
    """`SNAPSHOT_KEYS` holds every top-level key of a GPU record and the first part of every
    `unavailable` key the snapshot writes (a GPU lost mid-inventory included): a reading added
    to sitscheck's own snapshot must be added there, or a check could declare its key."""
    fake.lose_gpu(1, from_call=12)
    gpus = snapshot(fake, PSTATE)["gpus"]
    for gpu in gpus:
        written = set(gpu) | {key.partition(".")[0] for key in gpu["unavailable"]}
        assert written - {PSTATE.key} <= SNAPSHOT_KEYS, written - SNAPSHOT_KEYS


# ---- what a check reads back -------------------------------------------------------------------


def test_a_check_reads_its_values_live_and_from_the_bundle_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakePynvml
) -> None:
    fake.recording["gpus"][1]["unavailable"][PSTATE.key] = "not_supported"
    (now,) = run_live(tmp_path, monkeypatch, fake, PerfStateCheck())
    assert now.status == Status.OK, now
    assert [(g["state"], g["value"]) for g in now.facts["gpus"]] == [
        ("ok", 0),
        ("not_supported", None),
    ]
    assert now.facts["gpus"][1]["why"] == "not supported by this GPU or driver"
    bundle = _bundle(tmp_path / "bundle", fake.recording)
    (replayed,) = run_checks([PerfStateCheck()], ReplaySources(bundle), RunConfig())
    assert replayed.facts["gpus"] == now.facts["gpus"]
    assert (now.facts["source"], replayed.facts["source"]) == ("nvml", "nvml.json")


def test_a_reading_a_bundle_lacks_is_not_recorded_never_zero(tmp_path: Path) -> None:
    data = node_recording()
    del data["gpus"][1][PSTATE.key]
    data["gpus"][0]["lost"] = {"state": "gpu_lost", "detail": "GPU is lost"}
    del data["gpus"][0][PSTATE.key]
    (result,) = run_checks(
        [PerfStateCheck()], ReplaySources(_bundle(tmp_path / "b", data)), RunConfig()
    )
    lost, missing = result.facts["gpus"]
    assert (lost["state"], lost["value"], lost["lost"]) == ("gpu_lost", None, "gpu_lost")
    assert (missing["state"], missing["value"]) == ("not_recorded", None)
    assert missing["why"] == "not recorded in the evidence (nvml.json holds no perf_state)"


def test_a_key_the_check_did_not_declare_is_its_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakePynvml
) -> None:
    bundle = _bundle(tmp_path / "bundle", node_recording())
    (result,) = run_checks([UndeclaredRead()], ReplaySources(bundle), RunConfig())
    assert result.status == Status.UNKNOWN
    assert result.error == "NVML key 'encoder_sessions' is not declared by the check (EvidenceSpec)"


def test_without_nvml_the_check_is_unknown_with_the_reason(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "bundle", node_recording())
    (bundle / "nvml.json").write_text("{not json")
    (result,) = run_checks([PerfStateCheck()], ReplaySources(bundle), RunConfig())
    assert result.status == Status.UNKNOWN
    assert result.error is not None and result.error.startswith("NVML: ")
    assert "nvml.json: not valid JSON" in result.error


def test_a_bundle_recorded_without_the_reading_skips_the_check(tmp_path: Path) -> None:
    older = ReplaySources(NODE)  # recorded before the declaration existed
    assert nvml_reads_skip(older, [PSTATE]) == (
        "nvml.json was recorded without perf_state (by a sitscheck without the check)"
    )
    assert (
        nvml_reads_skip(ReplaySources(_bundle(tmp_path / "b", node_recording())), [PSTATE]) is None
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "nvidia-smi-L.txt").write_text((NODE / "nvidia-smi-L.txt").read_text())
    assert nvml_reads_skip(ReplaySources(empty), [PSTATE]) == "no nvml.json in the bundle"
    garbled = _bundle(tmp_path / "g", node_recording())
    (garbled / "nvml.json").write_text("[")
    assert nvml_reads_skip(ReplaySources(garbled), [PSTATE]) is None  # UNKNOWN, not skipped


# ---- the built-in reading that moved: the driver check's persistence mode ------------------


def test_persistence_mode_is_read_only_for_a_check_that_declares_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakePynvml
) -> None:
    (telemetry,) = run_live(tmp_path, monkeypatch, fake, cast(Check, GpuTelemetryCheck()))
    assert telemetry.status == Status.OK, telemetry
    assert fake.calls_to("nvmlDeviceGetPersistenceMode") == []


def test_the_driver_check_declares_persistence_mode_and_reads_it_live(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakePynvml
) -> None:
    sources = live(tmp_path, monkeypatch, fake, cast(Check, DriverCheck()))
    try:
        (driver,) = run_checks([cast(Check, DriverCheck())], sources, RunConfig())
        recorded, _ = sources.gpu_snapshot()
    finally:
        sources.close()
    assert len(fake.calls_to("nvmlDeviceGetPersistenceMode")) == 2
    assert recorded is not None
    assert [g["persistence_mode"] for g in recorded["gpus"]] == [1, 1]  # as NVML gives it
    assert [g["persistence_mode"] for g in driver.facts["gpus"]] == [True, True]


# --------------------------------------------------------------------------- helpers


class _Entry:
    """An installed check's entry point (`tests:Class`)."""

    group = "sitscheck.checks"

    def __init__(self, target: type) -> None:
        self.name, self.value, self._target = (
            target.__name__.lower(),
            f"tests:{target.__name__}",
            target,
        )

    def load(self) -> Any:
        return self._target


def _discovered(monkeypatch: pytest.MonkeyPatch, target: type) -> Any:
    """What `discover` makes of a check installed under an entry point."""
    monkeypatch.setattr(registry, "entry_points", lambda group: [_Entry(target)])
    (found,) = registry.discover()
    return found


def _bundle(folder: Path, data: dict[str, Any]) -> Path:
    folder.mkdir()
    (folder / "nvml.json").write_text(json.dumps(data))
    return folder
