"""What the acceptance parent reads of the GPUs through NVML (`sitscheck.workloads.gpus`), from
the recorded 2×H200's NVML (tests/fakes/fake_pynvml.py), and from values NVML should never
give (a reading the parent cannot use is None, never a crash in the middle of a phase)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from fakes.fake_pynvml import load_recording
from sitscheck.sources.nvml import Nvml
from sitscheck.workloads.gpus import VIOLATION_POLICIES, NodeGpus, Sampler
from test_accept_cli import BUNDLES, NodeNvml

ECC_KEYS = {"volatile_corrected", "volatile_uncorrected", "remap_pending", "remap_failure",
            "retired_pages"}  # fmt: skip
SAMPLE_KEYS = {"t", "sm_clock_mhz", "mem_clock_mhz", "power_w", "power_limit_w", "temp_c",
               "mem_temp_c", "clock_event_reasons"}  # fmt: skip


def recording(bundle: str = "h200x2-idle-v0") -> dict[str, Any]:
    return load_recording(BUNDLES / bundle / "nvml.json")


def node(fake: NodeNvml | None = None) -> NodeGpus:
    nvml = Nvml(fake or NodeNvml(recording()))
    nvml.init()
    return NodeGpus(nvml)


def test_the_recorded_node_as_the_parent_reads_it() -> None:
    gpus = node()
    assert [(t.index, t.pci_bus_id, t.name) for t in gpus.targets] == [
        (0, "0000:00:06.0", "NVIDIA H200"), (1, "0000:00:07.0", "NVIDIA H200")]  # fmt: skip
    assert gpus.unreachable == {} and gpus.unavailable is None
    assert gpus.memory_used(0) is None  # not in this recording: unknown, never 0
    ecc = gpus.ecc_state(0)
    assert ecc is not None and set(ecc) == ECC_KEYS and ecc["volatile_uncorrected"] == 0
    assert gpus.max_sm_clock(1) == 1980
    assert set(gpus.violations_ns(0)) <= set(VIOLATION_POLICIES)
    assert set(gpus.sample(0, 1.0)) == SAMPLE_KEYS
    assert gpus.busy_with(0) == [] and gpus.mig_enabled(0) is False
    gpus.close()


def test_memory_in_use_is_read_in_bytes() -> None:
    gpus = node(NodeNvml(recording("h200x1-v3")))
    used = gpus.memory_used(0)
    assert isinstance(used, int) and used >= 0  # idle: 0 bytes in use, as recorded
    gpus.close()


class Odd(NodeNvml):
    """NVML answering with values of the wrong kind."""

    def nvmlDeviceGetTotalEccErrors(self, handle: Any, kind: int, counter: int) -> Any:
        return SimpleNamespace(count=3)

    def nvmlDeviceGetMemoryInfo(self, handle: Any, version: int | None = None) -> Any:
        return SimpleNamespace(total=1 << 30)

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, clock: int) -> Any:
        return "fast"


def test_values_of_the_wrong_kind_are_none_not_a_crash() -> None:
    gpus = node(Odd(recording()))
    assert gpus.ecc_state(0) is None
    assert gpus.memory_used(0) is None
    assert gpus.max_sm_clock(0) is None
    gpus.close()


def test_the_sampler_samples_until_stopped() -> None:
    gpus = node()
    sampler = Sampler(gpus, [0, 1], period_s=0.01)
    sampler.start()
    sampler.stop()
    assert sampler.samples[0] and sampler.samples[1]  # one at the start, at least
    assert all(set(s) == SAMPLE_KEYS for s in sampler.samples[0])
    gpus.close()


def test_a_soak_sample_is_read_as_a_runs_window_sample_is() -> None:
    """One way to read a GPU's sample (`gpu_snapshot.read_sample`): the soak's trace and a run's
    window read the same values the same way, the HBM temperature by its field's own value
    type (the soak's own copy read the union's unsigned member whatever the type: 0 from the
    fake NVML, whose members do not overlap; right on a real little-endian union by luck)."""
    from sitscheck.sources.gpu_snapshot import collect_snapshot

    run = Nvml(NodeNvml(recording()))
    run.init()
    window = collect_snapshot(run, 0.0)["gpus"][0]["samples"][0]
    soak = node().sample(0, 0.0)  # another fake NVML of the same recording, at its first sample
    shared = set(window) & set(soak) - {"t"}
    assert shared == SAMPLE_KEYS - {"t", "power_limit_w"}
    assert {key: soak[key] for key in shared} == {key: window[key] for key in shared}
    assert soak["mem_temp_c"] == recording()["gpus"][0]["samples"][0]["mem_temp_c"] == 36
