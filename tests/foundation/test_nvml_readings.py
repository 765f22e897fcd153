"""The NVML calls behind memory, energy and NVLink throughput, replayed: the 1×H200 recording
that holds them (tests/bundles/h200x1-idle-v2), and the 2×H200 one with 18 active NVLinks
(h200x2-idle-v1) given throughput counters. Every call under the deadline; "not supported"
apart from errors; what was not read is never zero."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from fakes.fake_pynvml import FakePynvml, load_recording
from sitscheck.sources.gpu_snapshot import collect_snapshot
from sitscheck.sources.nvml import Nvml

BUNDLES = Path(__file__).resolve().parent.parent / "bundles"
V2 = load_recording(BUNDLES / "h200x1-idle-v2" / "nvml.json")
LINKED = load_recording(BUNDLES / "h200x2-idle-v1" / "nvml.json")
MEMORY = ("mem_total_bytes", "mem_used_bytes", "mem_reserved_bytes")
# GPM's last sample is taken only 0.2 s or more after its first, and memory is read once a
# second: windows that leave 1.3 s for the inventory and the first sample (7-13 ms, unless the
# machine is loaded) give a GPM interval and two memory readings
GPM_WINDOW_S = 1.5
MEMORY_WINDOW_S = 2.5


def snapshot(fake: FakePynvml, deadline_s: float = 2.0, window_s: float = 0.1) -> dict[str, Any]:
    """A short window: the counters read at both ends and a first sample, with its memory
    reading. Pass GPM_WINDOW_S for a GPM interval, MEMORY_WINDOW_S for two memory readings."""
    nvml = Nvml(fake, deadline_s)
    nvml.init()
    try:
        return collect_snapshot(nvml, window_s=window_s, interval_s=0.2)
    finally:
        fake.release()


def memory_of(gpu: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: s[k] for k in MEMORY if k in s} for s in gpu["samples"] if "mem_total_bytes" in s]


def with_throughput(recording: dict[str, Any], summed: bool = False) -> dict[str, Any]:
    out = copy.deepcopy(recording)
    for gpu in out["gpus"]:
        gpu["nvlink_throughput_kib_start"] = {"rx": 1_000, "tx": 2_000}
        gpu["nvlink_throughput_kib_end"] = {"rx": 51_000, "tx": 2_500}
        if summed:
            for key in ("nvlink_throughput_kib_start", "nvlink_throughput_kib_end"):
                gpu[key]["links_summed"] = 18
    return out


def test_the_recorded_readings_come_back() -> None:
    (got,) = snapshot(FakePynvml(V2), window_s=MEMORY_WINDOW_S)["gpus"]
    (recorded,) = V2["gpus"]
    assert got["unavailable"] == recorded["unavailable"] and got["failures"] == {}
    taken = memory_of(got)
    assert taken and taken == memory_of(recorded)[: len(taken)]
    assert (got["energy_mj_start"], got["energy_mj_end"]) == (
        recorded["energy_mj_start"],
        recorded["energy_mj_end"],
    )
    assert all(r["nvlink_rx_mib_s"] == 0.0 == r["nvlink_tx_mib_s"] for r in got["gpm"])
    # NVLink not supported on this GPU: no links, so no throughput counters asked for
    assert got["nvlink"] == [] and "nvlink_throughput_kib_start" not in got


def test_memory_falls_back_to_v1_once_and_keeps_reserved_out() -> None:
    v1 = copy.deepcopy(V2)
    for sample in v1["gpus"][0]["samples"]:
        sample.pop("mem_reserved_bytes", None)  # as recorded by a driver without _v2
    fake = FakePynvml(v1)
    (got,) = snapshot(fake, window_s=MEMORY_WINDOW_S)["gpus"]
    assert "memory" not in got["unavailable"]
    taken = memory_of(got)
    assert len(taken) >= 2 and all(set(s) == {"mem_total_bytes", "mem_used_bytes"} for s in taken)
    # one refused v2 call, then v1 for every later sample
    assert len(fake.calls_to("nvmlDeviceGetMemoryInfo")) == len(taken) + 1


@pytest.mark.parametrize("state", ["not_supported", "error"])
def test_energy_not_read_is_noted_with_its_state_never_zero(state: str) -> None:
    recording = copy.deepcopy(V2)
    recording["gpus"][0]["unavailable"]["energy"] = state
    (got,) = snapshot(FakePynvml(recording))["gpus"]
    assert got["energy_mj_start"] is None and got["energy_mj_end"] is None
    assert got["unavailable"]["energy"] == state
    assert ("energy" in got["failures"]) == (state == "error")


@pytest.mark.parametrize("summed", [False, True])
def test_nvlink_throughput_counters_over_every_link(summed: bool) -> None:
    recording = with_throughput(LINKED, summed)
    got = snapshot(FakePynvml(recording))["gpus"]
    for gpu, recorded in zip(got, recording["gpus"], strict=True):
        assert "nvlink_throughput.counters" not in gpu["unavailable"]
        for end in ("start", "end"):
            assert gpu[f"nvlink_throughput_kib_{end}"] == recorded[f"nvlink_throughput_kib_{end}"]
        # where the all-links scope is refused, the sum over the 18 links is ours, and said
        assert ("links_summed" in gpu["nvlink_throughput_kib_end"]) == summed


@pytest.mark.parametrize(("state", "failure"), [("not_supported", False), ("error", True)])
def test_a_refused_throughput_counter_is_noted_apart_from_errors(state: str, failure: bool) -> None:
    recording = with_throughput(LINKED)
    for gpu in recording["gpus"]:
        gpu["unavailable"]["nvlink_throughput.counters"] = state
    for gpu in snapshot(FakePynvml(recording))["gpus"]:
        assert gpu["unavailable"]["nvlink_throughput.counters"] == state
        assert "nvlink_throughput_kib_start" not in gpu and "nvlink_throughput_kib_end" not in gpu
        assert ("nvlink_throughput.counters" in gpu["failures"]) == failure
        if failure:
            assert gpu["failures"]["nvlink_throughput.counters"] == (
                "nvmlDeviceGetFieldValues(field 139, all links): NVML_ERROR_UNKNOWN"
            )


def test_a_gpm_nvlink_metric_that_fails_is_noted() -> None:
    recording = copy.deepcopy(V2)
    gpu = recording["gpus"][0]
    for record in gpu["gpm"]:
        record["nvlink_rx_mib_s"] = record["nvlink_tx_mib_s"] = None
    gpu["unavailable"]["nvlink_throughput.gpm"] = "error"
    (got,) = snapshot(FakePynvml(recording), window_s=GPM_WINDOW_S)["gpus"]  # a GPM interval
    assert got["gpm"] and all(r["nvlink_rx_mib_s"] is None for r in got["gpm"])
    assert all(r["sm_util"] == 0.0 for r in got["gpm"])  # the other metrics are unaffected
    assert got["unavailable"]["nvlink_throughput.gpm"] == "error"
    assert got["failures"]["nvlink_throughput.gpm"].startswith("nvmlGpmMetricsGet(nvlink_")


@pytest.mark.parametrize(
    ("function", "key"),
    [
        ("nvmlDeviceGetTotalEnergyConsumption", "energy"),
        ("nvmlDeviceGetMemoryInfo", "memory"),
    ],
)
def test_a_hung_call_is_a_timeout_under_the_deadline(function: str, key: str) -> None:
    fake = FakePynvml(V2)
    fake.block(function)
    (got,) = snapshot(fake, deadline_s=0.3)["gpus"]
    assert got["unavailable"][key] == "timeout"
    assert function in got["failures"][key] and "did not return within 0.3s" in got["failures"][key]


def test_a_field_id_the_driver_does_not_know_is_not_supported_not_an_error() -> None:
    """Field values and GPM metrics carry their own return code: INVALID_ARGUMENT there is a
    field id an older driver does not know (not a failed read, which would make the check
    UNKNOWN on every node of that driver); any other code is an error."""
    from sitscheck.sources.nvml import Nvml

    nvml = Nvml(FakePynvml(V2), 5.0)  # type: ignore[arg-type]
    assert nvml.return_state(0) == "ok"
    assert nvml.return_state(2) == "not_supported"  # NVML_ERROR_INVALID_ARGUMENT
    assert nvml.return_state(3) == "not_supported"  # NVML_ERROR_NOT_SUPPORTED
    assert nvml.return_state(999) == "error"  # NVML_ERROR_UNKNOWN
