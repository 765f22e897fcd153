"""The pure parts: the per-GPU view over nvidia-smi output, stats, link expectations, reason
bits, and each judge on edge cases the bundles do not cover."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from gpu_helpers import IDLE, above_ok, run_bundle
from sitscheck.checks.driver.inventory import from_fleet
from sitscheck.checks.driver.judge import judge
from sitscheck.checks.gpu_telemetry.reasons import decode, fractions
from sitscheck.checks.memory_errors.judge import judge as judge_memory
from sitscheck.checks.nvlink.judge import judge as judge_nvlink
from sitscheck.checks.pcie_link.impl import read_chain
from sitscheck.checks.pcie_link.judge import judge as judge_pcie
from sitscheck.checks.pcie_link.links import parse_gen, parse_width
from sitscheck.gpu.fleet import from_snapshot as fleet_from_snapshot
from sitscheck.gpu.from_csv import from_smi
from sitscheck.gpu.notes import group_notes
from sitscheck.gpu.readings import stats
from sitscheck.models import Severity
from sitscheck.sources.files import FileTree


def _recording() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((IDLE / "nvml.json").read_text())
    return data


# --- the view over nvidia-smi --------------------------------------------------------------

OLD_NAMES = """\
index, pci.bus_id, power.draw [W], enforced.power.limit [W], clocks_throttle_reasons.active, \
pcie.link.width.current, pcie.link.width.max, ecc.errors.uncorrected.volatile.total, \
temperature.gpu, utilization.gpu [%]
0, 00000000:0C:00.0, 32.70 W, 250.00 W, 0x0000000000000001, 16, 16, [N/A], 36, 2 %
1, 00000000:0D:00.0, [Unknown Error], 250.00 W, 0x0000000000000004, 8, 16, 0, 40, 97 %
Unable to determine the device handle for GPU2: 0000:0E:00.0: GPU is lost.  Reboot the system \
to recover this GPU
"""


def test_csv_view_reads_by_header_name_with_old_names_and_missing_kinds() -> None:
    fleet = from_smi(OLD_NAMES, "q.csv", None, "dmon.txt")
    assert [g.index for g in fleet.gpus] == [0, 1, 2]
    first, second, lost = fleet.gpus
    assert first.pci_bus_id == "0000:0c:00.0"
    (sample,) = first.samples
    assert sample["power_w"] == 32.7 and sample["clock_event_reasons"] == 1
    assert sample["util_gpu"] == 2 and sample["temp_c"] == 36
    assert first.get("power", "enforced_limit_w") == 250.0
    # [N/A] for ECC means the GPU has no ECC: not supported, not zero
    assert first.get("ecc", "volatile", "uncorrected") is None
    assert first.state("ecc.volatile.uncorrected") == "not_supported"
    assert first.state("ecc.volatile.corrected") == "not_queried"
    # a field the operator did not query
    assert first.state("clocks.sm") == "not_queried"
    # an error cell is a failed read, which makes the check that needs it UNKNOWN
    assert second.samples[0]["power_w"] is None
    assert second.state("power.draw") == "error"
    assert fleet.fault_error(["power"]) == (
        "GPU 1 power.draw: nvidia-smi power.draw: [Unknown Error]"
    )
    assert fleet.fault_error(["pcie"]) is None
    # the error line between rows is a lost GPU
    assert lost.lost is not None and lost.pci_bus_id == "0000:0e:00.0"


def test_dmon_rows_add_samples_and_the_replay_count() -> None:
    csv = (IDLE / "nvidia-smi-query-gpu.csv").read_text()
    dmon = (IDLE / "nvidia-smi-dmon.txt").read_text()
    fleet = from_smi(csv, "q.csv", dmon, "dmon.txt")
    gpu = fleet.gpus[1]
    assert len(gpu.samples) == 2
    assert gpu.samples[1]["power_w"] == 78.0 and gpu.samples[1]["pcie_tx_kbps"] == 0.0
    assert gpu.get("pcie", "replay_counter_start") == 4
    assert fleet.ref == "q.csv + dmon.txt"


def test_a_dmon_only_bundle_is_judged_against_the_fallback_temperature(
    tmp_path: Path,
) -> None:
    dmon = """\
# gpu   pwr  temp    sm   mem   enc   dec  mclk  pclk pviol tviol    fb  bar1 sbecc dbecc   pci rxpci txpci
# Idx     W     C     %     %     %     %   MHz   MHz     %  bool    MB    MB  errs  errs  errs  MB/s  MB/s
    0   111    83    25     7     0     0  4513  1683     0     0 11651     2     -     -     0    41     8
    1   111    82    18     5     0     0  4513  1733     0     0 11653     2     -     -     0    25    14
"""  # noqa: E501  (nvidia-smi dmon -s pucvmet from a 2016 driver, as printed)
    (tmp_path / "nvidia-smi-dmon.txt").write_text(dmon)
    report = run_bundle(tmp_path, checks=["pcie_link", "gpu_telemetry"])
    assert above_ok(report) == [("verdict", "gpu_telemetry.temp_at_slowdown", 0)]


def test_stats_are_nearest_rank_and_skip_missing_readings() -> None:
    assert stats(range(1, 21)) == {"min": 1.0, "mean": 10.5, "p95": 19.0, "max": 20.0}
    assert stats([5, None]) == {"min": 5.0, "mean": 5.0, "p95": 5.0, "max": 5.0}
    assert stats([None]) is None and stats([]) is None


def test_not_judged_notes_group_across_gpus() -> None:
    notes = ["NVML: absent", "GPU 0: a", "GPU 1: a", "GPU 2: b", "GPU 3: a", "GPU 5: a"]
    assert group_notes(notes) == ["NVML: absent", "GPUs 0-1, 3, 5: a", "GPU 2: b"]


# --- PCIe links --------------------------------------------------------------------------------


def test_sysfs_link_values() -> None:
    assert parse_gen("32.0 GT/s PCIe\n") == 5
    assert parse_gen("8 GT/s") == 3 and parse_gen("2.5 GT/s PCIe") == 1
    assert parse_gen("Unknown speed") is None and parse_gen(None) is None
    assert parse_width("16\n") == 16 and parse_width("") is None


def _tree(root: Path, chain: list[tuple[str, int, int, str, str]]) -> FileTree:
    """devices/pci0000:00/<bdf>/<bdf>/...: each (bdf, width, max width, speed, max speed)."""
    folder = root / "devices" / "pci0000:00"
    for bdf, width, width_max, speed, speed_max in chain:
        folder = folder / bdf
        folder.mkdir(parents=True)
        for name, value in (
            ("current_link_width", width),
            ("max_link_width", width_max),
            ("current_link_speed", speed),
            ("max_link_speed", speed_max),
        ):
            (folder / name).write_text(f"{value}\n")
    return FileTree(root, confined=True)


GEN5 = "32.0 GT/s PCIe"


def _one_gpu_fleet(bus_id: str) -> Any:
    recording = _recording()
    gpu = recording["gpus"][0]
    gpu["pci_bus_id"] = bus_id
    recording["gpus"] = [gpu]
    return fleet_from_snapshot(recording, "nvml.json")


def test_a_narrow_upstream_port_is_found_and_named(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        [
            ("0000:00:01.0", 8, 16, GEN5, GEN5),  # root port: its link to the switch is x8
            ("0000:01:00.0", 8, 16, GEN5, GEN5),  # the switch's upstream port, same link
            ("0000:02:00.0", 16, 16, GEN5, GEN5),
            ("0000:03:00.0", 16, 16, GEN5, GEN5),  # the GPU
        ],
    )
    chain = read_chain(tree, "0000:03:00.0")
    assert not isinstance(chain, str)
    assert [(c.bus_id, c.role) for c in chain][-1] == ("0000:03:00.0", "gpu")
    output = judge_pcie(_one_gpu_fleet("0000:03:00.0"), {0: chain})
    (finding,) = output.findings
    assert finding.code == "pcie_link.width_degraded" and finding.device is not None
    assert finding.device.index == 0
    refs = [e.ref for e in finding.evidence]
    assert refs == [
        "devices/pci0000:00/0000:00:01.0/current_link_width",
        "devices/pci0000:00/0000:00:01.0/0000:01:00.0/current_link_width",
    ]
    assert "x8 of x16" in finding.message


def test_a_slot_wired_x8_is_not_a_fault(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        [("0000:00:01.0", 8, 8, GEN5, GEN5), ("0000:03:00.0", 8, 16, GEN5, GEN5)],
    )
    chain = read_chain(tree, "0000:03:00.0")
    output = judge_pcie(_one_gpu_fleet("0000:03:00.0"), {0: chain})
    assert output.findings == []
    facts = output.facts["gpus"][0]
    assert facts["path"][1]["width_expected"] == 8 and facts["width_degraded"] is False


def test_a_port_below_its_generation_is_left_to_the_busy_rule(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        [("0000:00:01.0", 16, 16, "2.5 GT/s PCIe", GEN5), ("0000:03:00.0", 16, 16, GEN5, GEN5)],
    )
    output = judge_pcie(_one_gpu_fleet("0000:03:00.0"), {0: read_chain(tree, "0000:03:00.0")})
    assert output.findings == []
    assert output.facts["gpus"][0]["gen_below_max"] is True


# --- clock event reasons -----------------------------------------------------------------------


def test_reason_bits() -> None:
    assert decode(0x8C) == ["sw_power_cap", "hw_slowdown", "hw_power_brake_slowdown"]
    assert decode(0x1001) == ["gpu_idle", "0x1000"]
    shares = fractions([0x4, 0x4, 0xC, 0x1])
    assert shares is not None
    assert shares["sw_power_cap"] == 0.75 and shares["hw_slowdown"] == 0.25
    assert fractions([]) is None


# --- memory errors, NVLink ---------------------------------------------------------------------


def test_remap_failure_is_critical_and_old_gpus_report_retired_pages() -> None:
    recording = _recording()
    recording["gpus"][0]["remap"].update(failure=True, uncorrected=3)
    old = recording["gpus"][1]
    old["remap"] = None
    old["unavailable"] = {"remap": "not_supported"}
    old["retired_pages"] = {"pending": True, "sbe": 3, "dbe": 1}
    output = judge_memory(fleet_from_snapshot(recording, "nvml.json"))
    codes = [(f.code, f.severity, f.device.index if f.device else None) for f in output.findings]
    assert codes == [
        ("memory_errors.remap_failure", Severity.CRITICAL, 0),
        ("memory_errors.retired_pages_pending", Severity.WARNING, 1),
    ]
    assert "GPU 1: row remapping: not supported by this GPU or driver" in output.not_judged
    facts = output.facts["gpus"][1]
    assert (facts["retired_sbe"], facts["retired_dbe"]) == (3, 1)


def test_nvlink_replay_growth_is_a_finding_crc_growth_a_rate() -> None:
    recording = _recording()
    for gpu in recording["gpus"]:
        for link in gpu["nvlink"]:
            link["errors_end"] = dict(link["errors"])
        gpu["sampled_s"] = 2.0
    still = judge_nvlink(fleet_from_snapshot(copy.deepcopy(recording), "nvml.json"))
    assert still.findings == [] and still.not_judged == []
    # CRC counters that grow, as on every real H200 measured: a rate for the rules, no finding
    recording["gpus"][1]["nvlink"][3]["errors_end"]["crc_data"] += 30
    recording["gpus"][1]["nvlink"][4]["errors_end"]["crc_flit"] += 4
    noisy = judge_nvlink(fleet_from_snapshot(copy.deepcopy(recording), "nvml.json"))
    assert noisy.findings == []
    rates = noisy.facts["gpus"][1]["errors_per_s"]
    assert rates == {"replay": 0.0, "recovery": 0.0, "crc_flit": 2.0, "crc_data": 15.0}
    # one replay or recovery is a fault (DCGM fails the GPU)
    recording["gpus"][1]["nvlink"][3]["errors_end"]["replay"] += 1
    recording["gpus"][1]["nvlink"][7]["errors_end"]["recovery"] += 2
    grew = judge_nvlink(fleet_from_snapshot(recording, "nvml.json"))
    (finding,) = grew.findings
    assert finding.code == "nvlink.errors_grew" and finding.severity == Severity.CRITICAL
    assert finding.device is not None and finding.device.index == 1
    assert "link 3 replay +1" in finding.message and "link 7 recovery +2" in finding.message
    assert "crc" not in finding.message
    assert grew.facts["gpus"][1]["errors_delta"]["crc_data"] == 30


def test_counter_rates_are_per_the_interval_between_the_two_readings() -> None:
    # Live snapshots read the counters inside the window (`counters_s` apart), not at its
    # ends: a rate over the whole window would understate it.
    recording = _recording()
    gpu = recording["gpus"][0]
    for link in gpu["nvlink"]:
        link["errors_end"] = dict(link["errors"])
    gpu["nvlink"][0]["errors_end"]["crc_data"] += 30
    gpu["pcie"]["replay_counter_end"] = gpu["pcie"]["replay_counter_start"] + 4
    gpu["sampled_s"], gpu["counters_s"] = 3.0, 2.0
    nvlink = judge_nvlink(fleet_from_snapshot(copy.deepcopy(recording), "nvml.json"))
    assert nvlink.facts["gpus"][0]["errors_per_s"]["crc_data"] == 15.0
    pcie = judge_pcie(fleet_from_snapshot(copy.deepcopy(recording), "nvml.json"), {})
    replay = pcie.facts["gpus"][0]
    assert replay["replay_window_s"] == 2.0 and replay["replay_per_min"] == 120.0
    del gpu["counters_s"]  # a bundle from before: the window it was read across
    old = judge_nvlink(fleet_from_snapshot(copy.deepcopy(recording), "nvml.json"))
    assert old.facts["gpus"][0]["errors_per_s"]["crc_data"] == 10.0
    # read a few ms apart (--sample-seconds 0): growth is kept, a rate is not made up
    gpu["counters_s"] = 0.02
    gpu["nvlink"][0]["errors_end"]["replay"] = gpu["nvlink"][0]["errors"]["replay"] + 1
    brief = judge_nvlink(fleet_from_snapshot(copy.deepcopy(recording), "nvml.json"))
    facts = brief.facts["gpus"][0]
    assert "errors_per_s" not in facts and facts["errors_delta"]["crc_data"] == 30
    assert [f.code for f in brief.findings] == ["nvlink.errors_grew"]
    assert any("only 0.02 s apart" in note for note in brief.not_judged)
    short = judge_pcie(fleet_from_snapshot(recording, "nvml.json"), {}).facts["gpus"][0]
    assert short["replay_delta"] == 4 and "replay_per_min" not in short


def test_nvlink_not_supported_is_not_zero_links() -> None:
    recording = _recording()
    recording["gpus"][0]["nvlink"] = []
    recording["gpus"][0]["unavailable"]["nvlink"] = "not_supported"
    output = judge_nvlink(fleet_from_snapshot(recording, "nvml.json"))
    assert "links_reported" not in output.facts["gpus"][0]
    assert "GPU 0: NVLink: not supported by this GPU or driver" in output.not_judged


# --- driver: persistence mode, recovery action -------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"persistence_mode": False}, [("driver.persistence_mode_off", Severity.WARNING)]),
        ({"recovery_action": 1}, [("driver.recovery_action", Severity.CRITICAL)]),
        ({"recovery_action": 2}, [("driver.recovery_action", Severity.CRITICAL)]),
        ({"recovery_action": 3}, [("driver.recovery_action", Severity.WARNING)]),
        ({"recovery_action": 0}, []),
    ],
)
def test_driver_persistence_and_recovery(change: dict[str, Any], expected: list[Any]) -> None:
    recording = _recording()
    recording["gpus"][1].update(change)
    findings = judge(from_fleet(fleet_from_snapshot(recording, "nvml.json")), expect_gpus=2)
    assert [(f.code, f.severity) for f in findings] == expected
    assert all(f.device is not None and f.device.index == 1 for f in findings)


def test_driver_reads_recovery_and_persistence_from_the_csv() -> None:
    text = (
        "index, name, persistence_mode, gpu_recovery_action\n"
        "0, NVIDIA H100, Enabled, None\n"
        "1, NVIDIA H100, Disabled, Drain P2P\n"
    )
    inventory = from_fleet(from_smi(text, "q.csv", None, "dmon.txt"))
    assert [(g.persistence_mode, g.recovery_action) for g in inventory.gpus] == [
        (True, "none"),
        (False, "drain_p2p"),
    ]
    codes = [f.code for f in judge(inventory, expect_gpus=None)]
    assert codes == ["driver.persistence_mode_off", "driver.recovery_action"]
