"""`collect_snapshot` against the recorded 2×H200 NVML, replayed, with faults injected."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, cast

import pytest
from fakes.fake_pynvml import ERROR_CODES, INVENTORY_KEYS, FakePynvml
from fakes.nvml_node import fake_nvml_sources
from sitscheck.checks.driver.check import DriverCheck
from sitscheck.config import run_config
from sitscheck.contract import Check
from sitscheck.contract.registry import BrokenCheck
from sitscheck.contract.runner import run_checks
from sitscheck.models import Status
from sitscheck.sources.gpu_snapshot import collect_snapshot
from sitscheck.sources.live import LiveSources
from sitscheck.sources.nvml import Nvml, NvmlUnavailable
from sitscheck.sources.nvml_record import normalise_bus_id

SYSTEM_KEYS = ("driver_version", "nvml_version", "cuda_driver_version", "device_count", "pairs")
# The NVML calls the driver check declares (persistence mode): the recording holds their values
DRIVER_READS = DriverCheck.evidence.nvml_reads


def driver_check() -> Check | BrokenCheck:
    # DriverCheck's `metrics` is inferred as tuple[MetricSpec] (one item), which mypy does not
    # accept for the protocol's tuple[MetricSpec, ...]; at run time it is a Check.
    return cast(Check, DriverCheck())


def started(fake: FakePynvml, deadline_s: float = 2.0) -> Nvml:
    nvml = Nvml(fake, deadline_s)
    nvml.init()
    return nvml


def inventory(gpu: dict[str, Any]) -> dict[str, Any]:
    """A GPU's timing-free fields; NVLink's end-of-window counters compared on their own."""
    picked = {key: gpu.get(key) for key in INVENTORY_KEYS}
    picked["nvlink"] = [
        {k: v for k, v in link.items() if k != "errors_end"} for link in gpu.get("nvlink") or []
    ]
    return picked


# read once a second, not in every sample
IO_KEYS = (
    "pcie_tx_kbps",
    "pcie_rx_kbps",
    "mem_total_bytes",
    "mem_used_bytes",
    "mem_reserved_bytes",
)
# Readings the v0 recording predates: the fake, holding no value, answers NOT_SUPPORTED
NEWER_READINGS = ("memory", "energy", "nvlink_throughput.counters", "nvlink_throughput.gpm")


def predating(gpu: dict[str, Any]) -> dict[str, Any]:
    """`gpu` with the readings the recording predates set apart: each not supported, none 0."""
    unavailable = dict(gpu.get("unavailable") or {})
    # GPM's NVLink totals are asked for once a GPM interval exists (a short window under load
    # may end before its first)
    newer = [k for k in NEWER_READINGS if k != "nvlink_throughput.gpm" or gpu.get("gpm")]
    assert {key: unavailable.pop(key) for key in newer} == dict.fromkeys(newer, "not_supported")
    assert gpu.get("energy_mj_start") is None and gpu.get("energy_mj_end") is None
    assert not any(key.startswith("nvlink_throughput") for key in gpu)
    assert not any(key.endswith("_bytes") for sample in gpu["samples"] for key in sample)
    assert all(r["nvlink_rx_mib_s"] is None and r["nvlink_tx_mib_s"] is None for r in gpu["gpm"])
    return {**gpu, "unavailable": unavailable}


def without_time(sample: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in sample.items() if k != "t" and k not in IO_KEYS}


def test_snapshot_equals_the_recording(fake_nvml: FakePynvml, recording: dict[str, Any]) -> None:
    snapshot = collect_snapshot(started(fake_nvml), 0.5, 0.1, reads=DRIVER_READS)

    assert snapshot["format"] == "sitscheck-nvml" and snapshot["version"] == 1
    for key in SYSTEM_KEYS:
        assert snapshot[key] == recording[key], key
    assert len(snapshot["gpus"]) == 2
    for got, recorded in zip(snapshot["gpus"], recording["gpus"], strict=True):
        assert inventory(predating(got)) == inventory(recorded)
        assert "lost" not in got
        assert got.get("failures", {}) == {}
        samples = got["samples"]
        # each sample 0.1 s after the last, the first however late it comes (a loaded machine
        # may spend the 0.5 s window on the inventory): as many as fit, never more
        assert 1 <= len(samples) <= 6
        assert [without_time(s) for s in samples] == [
            without_time(s) for s in recorded["samples"][: len(samples)]
        ]
        assert [s["t"] for s in samples] == sorted(s["t"] for s in samples)
        with_io = [s for s in samples if "pcie_tx_kbps" in s]
        assert with_io and with_io[0] is samples[0]  # the first sample reads throughput
        assert len(with_io) <= 1 + samples[-1]["t"] // 1.0  # then at most once a second
        for link in got["nvlink"]:  # no errors during the window: the end counters repeat
            assert link["errors_end"] == link["errors"]
        assert "gpm" not in got["unavailable"], "GPM is supported on H200"
        # an interval is 0.2 s or more of the window: a loaded machine may leave less
        for interval in got["gpm"][:1]:
            assert {k: v for k, v in interval.items() if k != "seconds"} == {
                **{k: v for k, v in recorded["gpm"][0].items() if k != "seconds"},
                "nvlink_rx_mib_s": None,
                "nvlink_tx_mib_s": None,
            }


def test_bus_ids_are_normalised_from_nvml_form() -> None:
    assert normalise_bus_id("00000000:19:00.0") == "0000:19:00.0"
    assert normalise_bus_id("00000000:AF:00.0") == "0000:af:00.0"
    assert normalise_bus_id("0000:af:00.0") == "0000:af:00.0"
    assert normalise_bus_id(None) is None


def test_gpus_are_sampled_concurrently(
    fake_nvml: FakePynvml, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each GPU's first sample returns only once the other's has come: sampled one after
    another, the first would wait in vain (30 s, inside the calls' 60 s deadline)."""
    meeting = threading.Barrier(2)
    first_of: set[int] = set()
    utilization = fake_nvml.nvmlDeviceGetUtilizationRates

    def meets_the_other(handle: Any) -> Any:
        if handle.index not in first_of:
            first_of.add(handle.index)
            meeting.wait(timeout=30)
        return utilization(handle)

    monkeypatch.setattr(fake_nvml, "nvmlDeviceGetUtilizationRates", meets_the_other)
    snapshot = collect_snapshot(started(fake_nvml, deadline_s=60), window_s=1.0, interval_s=0.2)

    assert not meeting.broken  # each GPU's sampling began before the other's ended
    for gpu in snapshot["gpus"]:
        assert gpu["samples"] and gpu["samples"][0]["util_gpu"] is not None
        assert gpu.get("failures", {}) == {}


# The next two time real threads against a real window: they run with the slow suites, at six
# times the scale of an H200's driver (its readings, its inventory and the window), so the
# slack they allow a loaded machine is 0.9 s.
SCALE = 6


@pytest.mark.slow
def test_slow_counters_are_read_inside_the_window_and_their_interval_kept(
    fake_nvml: FakePynvml,
) -> None:
    # As on an H200: every NVLink error counter ~1 ms in the driver, one call at a time over
    # all GPUs (18 links x 4 counters a reading). Read before and after the window, as
    # before, they ran ahead of the first sample and past the window's end.
    fake_nvml.slow_down("nvmlDeviceGetNvLinkErrorCounter", 0.002 * SCALE)
    fake_nvml.slow_down("nvmlDeviceGetViolationStatus", 0.002 * SCALE)
    window = 1.2 * SCALE
    snapshot = collect_snapshot(started(fake_nvml), window_s=window, interval_s=0.2 * SCALE)

    first_sample = min(c.at for c in fake_nvml.calls_to("nvmlDeviceGetUtilizationRates"))
    window_end = first_sample + window
    # Outside the window means a whole reading outside it (72 calls: 0.86 s); the slack is an
    # eighth of the window (0.9 s)
    slack = window / 8
    for function in ("nvmlDeviceGetNvLinkErrorCounter", "nvmlDeviceGetViolationStatus"):
        times = [c.at for c in fake_nvml.calls_to(function)]
        assert times and min(times) >= first_sample - slack, f"{function} read before the window"
        assert max(times) <= window_end + slack, f"{function} still read after the window"
    for gpu in snapshot["gpus"]:
        assert all("errors" in link and "errors_end" in link for link in gpu["nvlink"])
        assert gpu["violations_ns_start"] and gpu["violations_ns_end"]
        assert gpu["pcie"]["replay_counter_start"] is not None
        assert gpu["pcie"]["replay_counter_end"] is not None
        # the two readings are apart by most of the window, and the interval is what is kept
        assert window / 3 <= gpu["counters_s"] < window
    # the pairs were read while the GPUs were sampled, not before
    pair_calls = [c.at for c in fake_nvml.calls_to("nvmlDeviceGetP2PStatus")]
    assert pair_calls and min(pair_calls) >= first_sample - slack
    assert snapshot["pairs"] and "pairs_s" in snapshot["phases"]


@pytest.mark.slow
def test_a_slow_inventory_is_taken_inside_the_window_not_before_it(
    fake_nvml: FakePynvml,
) -> None:
    # Inventory calls serialise in the driver too (15 ms per H200): each GPU's thread takes
    # its inventory and then samples up to the common deadline, so N GPUs cost the window,
    # not the window plus N inventories.
    inventory = 0.15 * SCALE
    fake_nvml.slow_down("nvmlDeviceGetSerial", inventory)
    window = 1.0 * SCALE
    snapshot = collect_snapshot(started(fake_nvml), window_s=window, interval_s=0.1 * SCALE)

    phases = snapshot["phases"]
    assert phases["inventory_s"] >= 1.9 * inventory  # two serialised calls
    assert phases["sampling_s"] < window + inventory  # ... spent inside the window
    sampled = sorted(gpu["sampled_s"] for gpu in snapshot["gpus"])
    assert sampled[0] <= window - inventory  # the later GPU sampled what was left of the window
    ends = [
        max(c.at for c in fake_nvml.calls_to("nvmlDeviceGetUtilizationRates", gpu=index))
        for index in (0, 1)
    ]
    assert abs(ends[0] - ends[1]) < inventory  # both up to the same deadline


def test_gpm_not_supported_is_recorded_not_fatal(recording: dict[str, Any]) -> None:
    fake = FakePynvml(recording, gpm_supported=False)
    snapshot = collect_snapshot(started(fake), window_s=0.2, interval_s=0.1)
    for gpu in snapshot["gpus"]:
        assert gpu["gpm"] == []
        assert gpu["unavailable"]["gpm"] == "not_supported"
        assert gpu["samples"]


@pytest.mark.parametrize("from_call", [0, 5, 40])
def test_lost_gpu_is_marked_and_the_other_is_unaffected(
    fake_nvml: FakePynvml, recording: dict[str, Any], from_call: int
) -> None:
    fake_nvml.lose_gpu(1, from_call=from_call)
    snapshot = collect_snapshot(started(fake_nvml), 0.3, 0.1, reads=DRIVER_READS)
    healthy, lost = snapshot["gpus"]

    assert lost["lost"]["state"] == "gpu_lost"
    assert "samples" not in lost  # a lost GPU is not sampled
    assert inventory(predating(healthy)) == inventory(recording["gpus"][0])
    assert "lost" not in healthy and healthy["samples"]
    if from_call == 0:
        assert "nvmlDeviceGetHandleByIndex(1)" in lost["lost"]["detail"]
        assert snapshot["pairs"] == []  # no handle, no pair
    else:
        # the pair is read alongside the GPUs (inside the window): before or after the fake's
        # n-th call on GPU 1, as threads are scheduled; after it, nothing is made up
        pair = snapshot["pairs"][0]
        assert pair["common_ancestor"] in (None, recording["pairs"][0]["common_ancestor"])
        # what it answered before it fell off is kept; the first failing call is named
        assert lost["uuid"] == recording["gpus"][1]["uuid"]
        assert "gpu_lost" in lost["unavailable"].values()
        assert "NVML_ERROR_GPU_IS_LOST" in lost["lost"]["detail"]


def test_blocking_call_costs_the_deadline_and_is_recorded(fake_nvml: FakePynvml) -> None:
    fake_nvml.block("nvmlDeviceGetSerial", gpu=0)
    nvml = started(fake_nvml, deadline_s=0.5)
    began = time.monotonic()
    snapshot = collect_snapshot(nvml, window_s=0.2, interval_s=0.1)

    assert time.monotonic() - began >= 0.5  # its deadline waited out (the call hangs still)
    gpu = snapshot["gpus"][0]
    assert gpu["unavailable"]["serial"] == "timeout"
    assert gpu["serial"] is None
    assert "nvmlDeviceGetSerial(handle)" in gpu["failures"]["serial"]
    assert gpu["name"] == "NVIDIA H200"  # read before the hang
    assert nvml.stuck_at == "nvmlDeviceGetSerial(handle)"


def test_a_gpu_whose_handle_lookup_hangs_is_marked(fake_nvml: FakePynvml) -> None:
    fake_nvml.block_gpu(1)
    nvml = started(fake_nvml, deadline_s=0.4)
    snapshot = collect_snapshot(nvml, window_s=0.2, interval_s=0.1)

    hung = snapshot["gpus"][1]
    assert hung["lost"]["state"] == "timeout"
    assert "nvmlDeviceGetHandleByIndex(1)" in hung["lost"]["detail"]
    assert len(fake_nvml.calls_to("nvmlDeviceGetHandleByIndex", gpu=1)) == 1
    assert fake_nvml.calls_to("nvmlDeviceGetName", gpu=1) == []


def test_a_gpu_whose_every_call_hangs_costs_about_one_deadline(fake_nvml: FakePynvml) -> None:
    """One hung call costs its deadline; the GPU is not asked again (each later call would
    cost another): at most the handle, the hung call and one more are asked of it."""
    fake_nvml.block_gpu(1, from_call=1)  # it hands out its handle, then never answers again
    nvml = started(fake_nvml, deadline_s=0.4)
    snapshot = collect_snapshot(nvml, window_s=0.2, interval_s=0.1)

    hung = snapshot["gpus"][1]
    assert hung["unavailable"]["name"] == "timeout"
    assert "nvmlDeviceGetName(handle)" in hung["failures"]["name"]
    assert len([c for c in fake_nvml.calls if c.gpu == 1]) <= 3  # not asked again and again


# ---- through LiveSources and the driver check ------------------------------------------


@pytest.fixture
def live(tmp_path: Path, fake_nvml: FakePynvml, monkeypatch: pytest.MonkeyPatch) -> LiveSources:
    return fake_nvml_sources(tmp_path, monkeypatch, fake_nvml)


def test_live_driver_check_reads_the_replayed_gpus(
    live: LiveSources, fake_nvml: FakePynvml
) -> None:
    try:
        (result,) = run_checks([driver_check()], live, run_config({"expect_gpus": 2}))
    finally:
        live.close()
    assert result.status == Status.OK, result
    assert result.facts["source"] == "nvml"
    assert result.facts["gpu_count"] == 2
    assert result.facts["driver_version"] == "580.159.04"
    assert [g["pci_bus_id"] for g in result.facts["gpus"]] == ["0000:00:06.0", "0000:00:07.0"]
    assert fake_nvml.shutdown_count == 1


def test_live_driver_check_reports_the_lost_gpu(live: LiveSources, fake_nvml: FakePynvml) -> None:
    fake_nvml.lose_gpu(1, from_call=3)
    try:
        (result,) = run_checks([driver_check()], live, run_config({"expect_gpus": 2}))
    finally:
        live.close()
    assert result.status == Status.CRITICAL
    codes = {f.code: f for f in result.findings}
    # the fixture's PATH has no nvidia-smi: said as info, beside what NVML shows
    assert set(codes) == {"driver.gpu_lost", "driver.gpu_count", "driver.nvidia_smi_unavailable"}
    lost = codes["driver.gpu_lost"]
    assert lost.device is not None and lost.device.index == 1
    assert "1 GPUs answer, 2 expected" in codes["driver.gpu_count"].message


def test_nvml_init_failure_is_the_snapshots_reason(
    live: LiveSources, fake_nvml: FakePynvml
) -> None:
    fake_nvml.fail_init(ERROR_CODES["NVML_ERROR_DRIVER_NOT_LOADED"])
    with pytest.raises(NvmlUnavailable) as caught:
        Nvml(fake_nvml).init()
    assert caught.value.no_driver
    snapshot, reason = live.gpu_snapshot()
    assert snapshot is None
    assert reason is not None and "NVML_ERROR_DRIVER_NOT_LOADED" in reason
    live.close()
