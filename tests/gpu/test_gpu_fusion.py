"""Evidence fusion (issue 18, classes 5 and 6) on the recorded 2xH200 bundle
(tests/bundles/h200x2-idle-v1) and small edits of it: every GPU check merges NVML, `-L`, the
CSV and `-q` per GPU by bus id/UUID, keeps each value's source, reports disagreements; a lost
GPU keeps the profile for the GPUs that answer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from gpu_helpers import TESTS, above_ok
from make_fault_bundles import Bundle, gpu_lost
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.engine.loader import load_profiles
from sitscheck.engine.profiles import select_profile
from sitscheck.gpu.calls import NVML, SMI, SMI_L, SMI_Q
from sitscheck.gpu.fleet import from_snapshot
from sitscheck.gpu.from_csv import from_smi
from sitscheck.gpu.from_list import from_list
from sitscheck.gpu.from_query_q import from_query_q
from sitscheck.gpu.fusion import merge
from sitscheck.models import CheckResult, Report, Status

V1 = TESTS / "bundles" / "h200x2-idle-v1"
OLDER_VBIOS = "96.00.74.00.01"  # an older H200 VBIOS line than the recorded 96.00.A5.00.1A


def copy_of(tmp_path: Path, keep: set[str] | None = None) -> Bundle:
    target = tmp_path / "bundle"
    shutil.copytree(V1, target)
    if keep is not None:
        for path in target.iterdir():
            if path.name not in keep | {"meta.json"}:
                shutil.rmtree(path) if path.is_dir() else path.unlink()
    bundle = Bundle.__new__(Bundle)
    bundle.path = target
    if (target / "nvml.json").exists():
        bundle.nvml = json.loads((target / "nvml.json").read_text())
    return bundle


def replay(bundle: Bundle | Path, **config: Any) -> Report:
    path = bundle.path if isinstance(bundle, Bundle) else bundle
    return execute(RunRequest(RunConfig(**config), str(path)))


def text(name: str) -> str:
    return (V1 / name).read_text()


def snapshot() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(text("nvml.json"))
    return data


def csv_fleet(csv: str | None = None) -> Any:
    return from_smi(csv or text("nvidia-smi-query-gpu.csv"), "q.csv", None, "dmon.txt")


# --- joining --------------------------------------------------------------------------------


def test_all_four_sources_join_into_two_gpus_with_no_disagreement() -> None:
    fleet = merge(
        [
            from_list(text("nvidia-smi-L.txt"), "L.txt"),
            from_query_q(text("nvidia-smi-q.txt"), "q.txt"),
            csv_fleet(),
            from_snapshot(snapshot(), "nvml.json"),
        ]
    )
    assert fleet.sources == (NVML, SMI, SMI_Q, SMI_L)  # in precedence, whatever the order given
    assert [g.pci_bus_id for g in fleet.gpus] == ["0000:00:06.0", "0000:00:07.0"]
    assert fleet.disagreements == ()
    assert fleet.listed == {NVML: 2, SMI: 2, SMI_Q: 2, SMI_L: 2}
    gpu = fleet.gpus[0]
    assert gpu.source == NVML and gpu.get("vbios") == "96.00.A5.00.1A"
    # NVML reads no retired-page state on H200 ("not supported"); -q agrees: nothing filled
    assert gpu.state("retired_pages.pending") == "not_supported"


def test_joined_by_bus_id_and_uuid_never_by_list_position() -> None:
    rows = text("nvidia-smi-query-gpu.csv").splitlines()
    swapped = "\n".join([rows[0], rows[2], rows[1]]) + "\n"  # GPU 1's row printed first
    reordered = merge([from_snapshot(snapshot(), "nvml.json"), csv_fleet(swapped)])
    assert reordered.disagreements == ()
    listing = text("nvidia-smi-L.txt").splitlines()
    by_uuid = merge([from_snapshot(snapshot(), "nvml.json"), from_list(listing[1] + "\n", "L")])
    (only,) = [g for g in by_uuid.gpus if SMI_L in g.refs]
    assert only.index == 1 and only.uuid == "GPU-cf161c2c-89b7-fe7d-c5cc-f4a07e8844b8"


def test_two_records_of_one_source_claiming_one_gpu_are_kept_apart() -> None:
    rows = text("nvidia-smi-query-gpu.csv").splitlines()
    twice = "\n".join([rows[0], rows[1], rows[1].replace("0, NVIDIA", "1, NVIDIA", 1)]) + "\n"
    fleet = merge([csv_fleet(twice)])
    assert len(fleet.gpus) == 2
    assert any("two records claim GPU 0000:00:06.0" in p for p in fleet.problems)


# --- fusion: sources, gaps, faults ------------------------------------------------------------


def test_a_value_one_source_lacks_comes_from_another_and_says_so() -> None:
    data = snapshot()
    gpu = data["gpus"][1]
    gpu["pcie"]["width_current"] = None
    gpu["unavailable"]["pcie.width_current"] = "not_supported"
    fleet = merge([from_snapshot(data, "nvml.json"), from_query_q(text("nvidia-smi-q.txt"), "q")])
    view = fleet.gpus[1]
    assert view.get("pcie", "width_current") == 16
    assert view.source_of("pcie.width_current") == SMI_Q
    assert view.source_of("pcie.width_max") == NVML
    assert view.state("pcie.width_current") is None
    assert view.evidence("pcie.width_current").ref == "q (pcie.width_current)"
    assert view.identity()["sources"] == {"pcie.width_current": SMI_Q}


def test_a_failed_read_is_not_papered_over_by_another_source() -> None:
    data = snapshot()
    gpu = data["gpus"][1]
    gpu["pcie"]["width_current"] = None
    gpu["unavailable"]["pcie.width_current"] = "timeout"
    fleet = merge([from_snapshot(data, "nvml.json"), from_query_q(text("nvidia-smi-q.txt"), "q")])
    assert fleet.gpus[1].get("pcie", "width_current") is None
    assert fleet.fault_error(("pcie",)) is not None


def test_samples_come_whole_from_one_source() -> None:
    fleet = merge([from_snapshot(snapshot(), "nvml.json"), csv_fleet()])
    gpu = fleet.gpus[0]
    assert len(gpu.samples) == len(snapshot()["gpus"][0]["samples"])  # NVML's window only
    assert gpu.source_of("power.draw") == NVML


def test_driver_version_disagreement_is_node_wide() -> None:
    q = text("nvidia-smi-q.txt").replace("580.159.04", "575.57.08", 1)
    fleet = merge([from_snapshot(snapshot(), "nvml.json"), from_query_q(q, "q.txt")])
    (item,) = fleet.disagreements
    assert (item.what, item.index) == ("driver_version", None)
    assert "nvml (nvml.json) reads '580.159.04'" in item.message()
    assert "nvidia-smi -q (q.txt) reads '575.57.08'" in item.message()


# --- injected replays of the recorded bundle --------------------------------------------------


def test_vbios_mismatch_in_the_csv_beside_the_gpu_list_is_judged(tmp_path: Path) -> None:
    """`-L` and a `--query-gpu` CSV: VBIOS and persistence mode come from the CSV."""
    bundle = copy_of(tmp_path, keep={"nvidia-smi-L.txt", "nvidia-smi-query-gpu.csv"})
    bundle.csv_set(1, "vbios_version", OLDER_VBIOS)
    report = replay(bundle)
    assert above_ok(report) == [("finding", "driver.vbios_mismatch", 1)]
    assert report.profile == "h200-sxm"
    driver = report.check("driver")
    assert driver is not None
    (finding,) = driver.findings
    assert OLDER_VBIOS in finding.message and "96.00.A5.00.1A" in finding.message
    gpus = driver.facts["gpus"]
    assert [g["persistence_mode"] for g in gpus] == [True, True]
    assert gpus[1]["source"] == "nvidia-smi --query-gpu"
    assert driver.facts["sources"] == ["nvidia-smi --query-gpu", "nvidia-smi -L"]
    assert not any("persistence mode" in n for n in driver.not_judged)


def test_the_same_list_without_the_csv_cannot_judge_vbios(tmp_path: Path) -> None:
    bundle = copy_of(tmp_path, keep={"nvidia-smi-L.txt"})
    report = replay(bundle, checks=["driver"])
    driver = report.check("driver")
    assert driver is not None and driver.status == Status.OK
    assert driver.facts["source"] == "nvidia-smi -L"
    assert any("persistence mode: not in" in n for n in driver.not_judged)


def test_vbios_differing_between_nvml_and_the_csv_is_a_disagreement(tmp_path: Path) -> None:
    bundle = copy_of(tmp_path)
    bundle.csv_set(1, "vbios_version", OLDER_VBIOS)
    report = replay(bundle)
    assert above_ok(report) == [("finding", "driver.sources_disagree", 1)]
    driver = report.check("driver")
    assert driver is not None
    (finding,) = driver.findings
    assert "nvml (nvml.json) reads '96.00.A5.00.1A'" in finding.message
    assert f"reads '{OLDER_VBIOS}'" in finding.message
    assert {e.source for e in finding.evidence} == {"nvml", "nvidia-smi --query-gpu"}


def test_the_recorded_bundle_fused_raises_nothing_and_names_its_sources() -> None:
    report = replay(V1)
    assert above_ok(report) == []
    driver = report.check("driver")
    assert driver is not None
    assert driver.facts["sources"] == [
        "nvml", "nvidia-smi --query-gpu", "nvidia-smi -q", "nvidia-smi -L",
    ]  # fmt: skip
    assert driver.facts["disagreements"] == []


# --- a lost GPU keeps the profile -------------------------------------------------------------


def lost_bundle(tmp_path: Path) -> Bundle:
    bundle = copy_of(tmp_path)
    gpu_lost(bundle)  # the same edit as tests/bundles/faults/gpu-lost-gpu1, on the v1 recording
    bundle.save()
    return bundle


def test_one_lost_gpu_is_found_and_the_profile_stays(tmp_path: Path) -> None:
    report = replay(lost_bundle(tmp_path))
    assert above_ok(report) == [("finding", "driver.gpu_lost", 1)]
    assert report.profile == "h200-sxm"
    lost = report.check("driver")
    assert lost is not None
    entry = lost.facts["gpus"][1]
    assert (entry["state"], entry["pci_bus_id"], entry["pci_device_id"]) == (
        "gpu_lost", "0000:00:07.0", "233510de",
    )  # fmt: skip
    assert entry["sources"]["pci_device_id"] == "sysfs"
    # the profile's rules judge the GPU that answers instead of being skipped
    ran = {v.rule: v.status for v in report.verdicts}
    for rule in ("nvlink.links_below_profile", "topology.nvlink_missing", "topology.partial_board"):
        assert ran[rule] == Status.OK, rule
    nvlink = report.check("nvlink")
    assert nvlink is not None
    answering = next(g for g in nvlink.facts["gpus"] if g["index"] == 0)
    assert answering["links_reported"] == 18


def test_without_its_sysfs_entry_the_profile_comes_from_the_gpus_that_answer(
    tmp_path: Path,
) -> None:
    bundle = lost_bundle(tmp_path)
    shutil.rmtree(bundle.path / "sysfs" / "devices" / "pci0000:00" / "0000:00:07.0")
    report = replay(bundle)
    assert report.profile == "h200-sxm"
    assert ("finding", "driver.gpu_lost", 1) in above_ok(report)
    driver = report.check("driver")
    assert driver is not None and driver.facts["gpus"][1]["pci_device_id"] is None


def _driver_result(*gpus: dict[str, Any]) -> list[CheckResult]:
    return [CheckResult(name="driver", status=Status.OK, facts={"gpus": list(gpus)})]


def test_profile_choice_with_a_lost_gpu(profiles: dict[str, Any]) -> None:
    h200 = {"index": 0, "name": "NVIDIA H200", "pci_device_id": "233510de", "state": "ok"}
    bare_lost = {"index": 1, "name": None, "pci_device_id": None, "state": "gpu_lost"}
    chosen = select_profile(profiles, None, _driver_result(h200, bare_lost))
    assert chosen is not None and chosen.name == "h200-sxm"
    other_lost = {**bare_lost, "pci_device_id": "26b910de"}  # an L40S id: a mixed node
    assert select_profile(profiles, None, _driver_result(h200, other_lost)) is None
    assert select_profile(profiles, None, _driver_result(bare_lost)) is None
    gh200 = {"index": 0, "name": "NVIDIA GH200 480GB", "pci_device_id": "234210de"}
    chosen = select_profile(profiles, None, _driver_result(gh200))
    assert chosen is not None and chosen.name == "gh200"  # by its device id, not "H200"


@pytest.fixture
def profiles() -> dict[str, Any]:
    return load_profiles([])
