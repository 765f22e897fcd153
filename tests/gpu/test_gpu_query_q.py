"""`nvidia-smi -q` → GPU records (sitscheck.gpu.from_query_q), on real outputs of five driver
eras (tests/corpus/shared/smi, the shared corpus's samples with their sources) and on small
edits of them. Every expected value was read by hand from the sample's text."""

from __future__ import annotations

from typing import Any

import pytest
from corpus_paths import SHARED_CORPUS
from gpu_helpers import TESTS
from sitscheck.checks.gpu_telemetry.judge import judge as judge_telemetry
from sitscheck.checks.memory_errors.judge import judge as judge_memory
from sitscheck.checks.pcie_link.judge import judge as judge_pcie
from sitscheck.gpu.from_query_q import cuda_version_number, from_query_q
from sitscheck.gpu.view import GpuFleet, GpuView

SAMPLES = SHARED_CORPUS / "smi"
RECORDED_Q = TESTS / "bundles" / "h200x2-idle-v1" / "nvidia-smi-q.txt"


def sample(prefix: str) -> str:
    (path,) = SAMPLES.glob(prefix + "-q-*.txt")
    return path.read_text()


def only(fleet: GpuFleet) -> GpuView:
    (gpu,) = fleet.gpus
    return gpu


def edited(prefix: str, old: str, new: str) -> str:
    text = sample(prefix)
    assert text.count(old) == 1, old
    return text.replace(old, new)


# --- what each era prints, read by label ------------------------------------------------------

# (sample, name, bus id, device id, VBIOS, driver, CUDA, PCIe gen cur/max, width cur/max,
#  power limit, clock maxima, power draw, temperature)
ERAS: dict[str, tuple[Any, ...]] = {
    "001": ("NVIDIA A10", "0000:07:00.0", "223610de", "94.02.5C.00.04", "535.129.03", 12020,
            (4, 4, 16, 16), 150.0, (1695, 6251), 43.89, 33),
    "003": ("NVIDIA H200", "0000:03:00.0", "233510de", "96.00.A5.00.03", "550.90.12", 12040,
            (5, 5, 16, 16), 700.0, (1980, 3201), 74.58, 28),
    "004": ("NVIDIA GH200 480GB", "0000:dd:00.0", "234210de", "96.00.8D.00.03", "550.127.05",
            12040, (4, 4, 1, 1), 700.0, (1980, 2619), 87.88, 31),
    "005": ("NVIDIA H100 80GB HBM3", "0000:00:09.0", "233010de", "96.00.A5.00.01", "590.48.01",
            13010, (5, 5, 16, 16), 700.0, (1980, 2619), 629.45, 59),
    "018": ("NVIDIA A100-SXM4-80GB", "0000:07:00.0", "20b210de", "92.00.45.00.05", "525.60.13",
            12000, (4, 4, 16, 16), 400.0, (1410, 1593), 67.97, 28),
}  # fmt: skip


@pytest.mark.parametrize("era", sorted(ERAS))
def test_each_era_gives_its_values_by_label(era: str) -> None:
    name, bus, device, vbios, driver, cuda, link, limit, clocks, draw, temp = ERAS[era]
    fleet = from_query_q(sample(era), "q.txt")
    gpu = only(fleet)
    assert (gpu.name, gpu.pci_bus_id, gpu.get("pci_device_id")) == (name, bus, device)
    assert gpu.get("vbios") == vbios and gpu.get("persistence_mode") is True
    assert (fleet.driver_version, fleet.cuda_driver_version) == (driver, cuda)
    pcie = gpu.get("pcie")
    assert (pcie["gen_current"], pcie["gen_max"], pcie["width_current"], pcie["width_max"]) == link
    assert gpu.get("power", "enforced_limit_w") == limit
    assert (gpu.get("clocks_max_mhz", "sm"), gpu.get("clocks_max_mhz", "mem")) == clocks
    (reading,) = gpu.samples
    assert (reading["power_w"], reading["temp_c"]) == (draw, temp)
    assert gpu.get("ecc", "mode_enabled") is True
    assert gpu.get("remap", "failure") is False


def test_590_prints_average_and_instant_draw_and_replays() -> None:
    gpu = only(from_query_q(sample("005"), "q.txt"))
    (reading,) = gpu.samples
    # "Average Power Draw : 629.45 W" is what --query-gpu=power.draw reports on 590
    assert reading["power_w"] == 629.45
    assert (reading["util_gpu"], reading["util_mem"]) == (100, 11)
    assert gpu.get("pcie", "replay_counter_start") == 9
    assert gpu.get("recovery_action") == "none"  # "GPU Recovery Action : None"


def test_clock_event_reasons_become_nvml_bits() -> None:
    idle = only(from_query_q(sample("001"), "q.txt"))  # Idle: Active, the rest Not Active
    busy = only(from_query_q(sample("005"), "q.txt"))  # every reason Not Active
    old = only(from_query_q(sample("018"), "q.txt"))  # "Clocks Throttle Reasons" (525)
    assert idle.samples[0]["clock_event_reasons"] == 0x1
    assert busy.samples[0]["clock_event_reasons"] == 0
    assert old.samples[0]["clock_event_reasons"] == 0
    braking = edited(
        "005",
        "HW Power Brake Slowdown                    : Not Active",
        "HW Power Brake Slowdown                    : Active",
    )
    assert only(from_query_q(braking, "q.txt")).samples[0]["clock_event_reasons"] == 0x80


def test_ecc_and_remapper_counts_with_the_550_parity_split() -> None:
    gh200 = only(from_query_q(sample("004"), "q.txt"))
    # Aggregate: SRAM Correctable 0, Parity 0, SEC-DED 0, DRAM Correctable 0, DRAM Uncorrectable 1
    assert gh200.get("ecc", "aggregate") == {"corrected": 0, "uncorrected": 1}
    assert gh200.get("ecc", "volatile") == {"corrected": 0, "uncorrected": 0}
    assert gh200.get("remap") == {
        "corrected": 0,
        "uncorrected": 1,
        "pending": False,
        "failure": False,
        "histogram": {"max": 3071, "high": 1, "partial": 0, "low": 0, "none": 0},
    }
    a10 = only(from_query_q(sample("001"), "q.txt"))
    assert (a10.get("remap", "uncorrected"), a10.get("remap", "pending")) == (4, True)


def test_not_supported_not_available_and_zero_stay_apart() -> None:
    a10 = only(from_query_q(sample("001"), "q.txt"))
    # "Single Bit ECC : N/A" under Retired Pages: the GPU lacks page retirement (remaps rows)
    assert a10.get("retired_pages", "sbe") is None
    assert a10.state("retired_pages") == "not_supported"
    # "Memory Current Temp : N/A" on GDDR6: no HBM sensor
    assert a10.samples[0]["mem_temp_c"] is None
    assert a10.state("temperature.memory") == "not_supported"
    # zero is a reading: "Replays Since Reset : 0", "Correctable Error : 0"
    assert a10.get("pcie", "replay_counter_start") == 0 and a10.get("remap", "corrected") == 0
    gone = from_query_q(
        edited("003", "Power Draw                        : 74.58 W",
               "Power Draw                        : N/A"),
        "q.txt",
    )  # fmt: skip
    assert only(gone).samples[0]["power_w"] is None
    assert only(gone).state("power.draw") == "not_available"


def test_an_error_value_makes_the_check_unknown_naming_the_label() -> None:
    broken = from_query_q(
        edited(
            "003", "Current                   : 16x", "Current                   : Unknown Error"
        ),
        "q.txt",
    )
    gpu = only(broken)
    assert gpu.get("pcie", "width_current") is None
    assert gpu.state("pcie.width_current") == "error"
    output = judge_pcie(broken, {})
    assert output.error is not None
    assert "nvidia-smi -q PCI/GPU Link Info/Link Width/Current: Unknown Error" in output.error


def test_thresholds_printed_relative_to_tlimit_are_not_made_absolute() -> None:
    recorded = from_query_q(RECORDED_Q.read_text(), "q.txt")
    for gpu in recorded.gpus:
        assert gpu.get("temperature", "slowdown_c") is None
        assert gpu.state("temperature.slowdown_c") == "relative_only"
    a100 = only(from_query_q(sample("018"), "q.txt"))  # 525 prints them absolute
    assert a100.get("temperature") == {
        "shutdown_c": 92, "slowdown_c": 89, "gpu_max_c": 85, "mem_max_c": 95,
    }  # fmt: skip
    facts = judge_telemetry(from_query_q(sample("018"), "q.txt")).facts["gpus"][0]
    assert facts["temp_slowdown_c"] == 89 and facts["temp_margin_c"] == 89 - 28


def test_what_one_reading_cannot_tell_is_not_judged() -> None:
    fleet = from_query_q(sample("005"), "q.txt")
    telemetry = judge_telemetry(fleet)
    assert any("violation times: one reading only" in n for n in telemetry.not_judged)
    pcie = judge_pcie(fleet, {})
    assert pcie.facts["gpus"][0]["replay_count"] == 9
    assert "replay_per_min" not in pcie.facts["gpus"][0]
    assert any("nvidia-smi -q gave one reading" in n for n in pcie.not_judged)


def test_a_lost_gpu_line_and_a_selection_of_one_gpu() -> None:
    lost_text = (TESTS / "bundles" / "faults" / "gpu-lost-gpu1" / "nvidia-smi-q.txt").read_text()
    fleet = from_query_q(lost_text, "q.txt")
    assert [g.index for g in fleet.gpus] == [0, 1] and fleet.indexed and fleet.complete
    assert fleet.gpus[1].lost is not None and fleet.gpus[1].pci_bus_id == "0000:00:07.0"
    assert judge_memory(fleet).facts["gpus"][1]["lost"] is True
    # `nvidia-smi -q -i 0` on an 8-GPU node: one section, "Attached GPUs : 8"
    one = from_query_q(sample("018"), "q.txt")
    assert (len(one.gpus), one.attached, one.complete, one.indexed) == (1, 8, False, False)
    assert any("shows 1 of the 8 attached GPUs" in p for p in one.problems)


def test_a_section_not_queried_is_not_in_the_evidence() -> None:
    # 375.66, `-q -d MEMORY,UTILIZATION,...`: no PCI, power or ECC sections printed
    gpu = only(from_query_q(sample("017"), "q.txt"))
    assert gpu.pci_bus_id == "0000:01:00.0" and gpu.name is None
    assert gpu.samples[0]["util_gpu"] == 47 and gpu.samples[0]["util_mem"] == 6
    assert gpu.get("pcie", "width_current") is None
    assert gpu.why_missing("pcie.width_current") == "not in the evidence"
    assert gpu.why_missing("ecc.volatile.uncorrected") == "not in the evidence"


def test_text_that_is_not_q_output_is_a_problem_with_its_line() -> None:
    fleet = from_query_q("GPU 0: NVIDIA H200 (UUID: GPU-1)\n", "bundle/nvidia-smi-q.txt")
    assert fleet.gpus == ()
    (problem,) = fleet.problems
    assert problem.startswith("bundle/nvidia-smi-q.txt: ")


@pytest.mark.parametrize(
    ("text", "number"), [("13.0", 13000), ("12.4", 12040), ("12", 12000), ("x.1", None), ("", None)]
)
def test_cuda_version_in_nvml_encoding(text: str, number: int | None) -> None:
    assert cuda_version_number(text) == number
