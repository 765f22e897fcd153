"""The topology check and rules/topology.yaml over the recorded 2×H200 bundle and its faults.

Each fault variant copies the bundle into tmp and edits `nvidia-smi-topo-m.txt` (and, where
the fault would show there too, `nvml.json`), then asserts the one finding or verdict it must
give and that nothing else is above ok. Only rules/topology.yaml is loaded, so other rule
files do not move these results.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sitscheck.app import RunRequest, execute, installed_evidence
from sitscheck.checks.topology.parse import parse_topo
from sitscheck.config import RunConfig
from sitscheck.contract.registry import discover, select
from sitscheck.contract.runner import run_checks
from sitscheck.engine.cel import CelEnvironment
from sitscheck.engine.evaluate import evaluate_rules
from sitscheck.engine.loader import load_profiles, load_rules
from sitscheck.engine.profiles import select_profile
from sitscheck.models import CheckResult, Status, Verdict
from sitscheck.report.assemble import mark_explanations
from sitscheck.sources.command import CommandRunner
from sitscheck.sources.live import LiveOptions, LiveSources
from sitscheck.sources.nvml import Nvml
from sitscheck.sources.replay import ReplaySources

TESTS = Path(__file__).resolve().parent.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

from fakes.commands import write_command  # noqa: E402
from fakes.fake_pynvml import FakePynvml  # noqa: E402

REPO = TESTS.parent
BUNDLE = TESTS / "bundles" / "h200x2-idle-v0"
H100X8 = TESTS / "fixtures" / "topo" / "h100x8-nic-legend.txt"
RULES = REPO / "rules" / "topology.yaml"
TOPO = "nvidia-smi-topo-m.txt"
ANSI_HEADER = "\t\x1b[4mGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"


@dataclass
class Run:
    results: dict[str, CheckResult]
    verdicts: list[Verdict]

    @property
    def topology(self) -> CheckResult:
        return self.results["topology"]

    def above_ok(self) -> tuple[list[str], list[str]]:
        """(finding codes, rule ids) of every check result and verdict worse than ok."""
        codes = [
            f.code
            for r in self.results.values()
            for f in r.findings
            if f.severity.as_status().rank > Status.OK.rank
        ]
        rules = [v.rule for v in self.verdicts if v.status.rank > Status.OK.rank]
        return codes, rules

    def verdict(self, rule: str) -> list[Verdict]:
        return [v for v in self.verdicts if v.rule == rule]


def replay(
    bundle: Path, checks: tuple[str, ...], profile: str | None = None, site: Path | None = None
) -> Run:
    """Run `checks` on the bundle, then rules/topology.yaml (profiles: built-in, then `site`)."""
    config = RunConfig(checks=list(checks), profile=profile)
    results = run_checks(select(discover(), list(checks), []), ReplaySources(bundle), config)
    env = CelEnvironment()
    profiles = load_profiles([site] if site else [])
    chosen = select_profile(profiles, profile, results) if profile else None
    node = {"gpu_count": None, "expect_gpus": None}
    verdicts = evaluate_rules(load_rules([RULES], env), results, chosen, env, node)
    return Run({r.name: r for r in results}, verdicts)


def variant(tmp_path: Path, topo: str | None, nvml: Any = None, drop: tuple[str, ...] = ()) -> Path:
    """The recorded bundle copied, with its topo text replaced and nvml.json edited."""
    folder = tmp_path / "bundle"
    shutil.copytree(BUNDLE, folder)
    if topo is not None:
        (folder / TOPO).write_text(topo)
    if nvml is not None:
        data = json.loads((folder / "nvml.json").read_text())
        nvml(data)
        (folder / "nvml.json").write_text(json.dumps(data))
    for name in drop:
        (folder / name).unlink()
    return folder


def recorded_topo() -> str:
    return (BUNDLE / TOPO).read_text()


def set_links(data: dict[str, Any], gpu: int, links: range, active: bool) -> None:
    for entry in data["gpus"][gpu]["nvlink"]:
        if entry["link"] in links:
            entry["active"] = active
            if not active:
                entry.pop("remote_pci_bus_id", None)
                entry.pop("version", None)


# --- the recorded bundle -----------------------------------------------------------------


def test_recorded_bundle_has_no_finding_and_the_facts_md_shape() -> None:
    run = replay(BUNDLE, ("topology",))
    topo = run.topology
    assert topo.status == Status.OK, topo
    assert topo.findings == [] and topo.not_judged == []
    expected = parse_topo(recorded_topo()).to_fact()
    assert {k: topo.facts[k] for k in expected} == expected
    assert topo.facts["links"] == [
        {"a": "GPU0", "b": "GPU1", "kind": "NV18"},
        {"a": "GPU1", "b": "GPU0", "kind": "NV18"},
    ]
    summary = topo.facts["summary"]
    assert summary["gpu_count"] == 2 and summary["nvlink_pairs"] == 1
    assert summary["min_nvlink"] == 18 and summary["pcie_only_pairs"] == 0
    assert summary["asymmetric"] == 0 and summary["missing_gpus"] == []
    (pair,) = topo.facts["pairs"]
    assert pair["nvlink"] == 18 and pair["on_nvlink"] is True
    # healthy: NVLink through the (hidden) NVSwitch, PCIe common ancestor the host bridge
    assert pair["nvml_p2p_nvlink"] is True and pair["nvml_common_ancestor"] == "hostbridge"
    gpus = {g["index"]: g for g in topo.facts["per_gpu"]}
    assert gpus[1]["pci_bus_id"] == "0000:00:07.0"
    assert gpus[1]["nvlink_active"] == 18 and gpus[1]["nvlink_peers"] == 1
    assert gpus[1]["cpu_affinity"] == "0-31" and gpus[1]["sysfs_cpulist"] == "0-31"
    assert gpus[1]["sysfs_numa_node"] is None  # sysfs reads -1 in this VM: not a NUMA node
    assert gpus[1]["affinity_present"] is True and gpus[1]["affinity_consistent"] is True
    assert gpus[1]["nearest_nic_kind"] is None  # no NIC passed through to this VM
    metrics = {m.name: m.value for m in topo.metrics}
    assert metrics["sitscheck.topology.nvlink_pairs"] == 1


def test_recorded_bundle_passes_the_h200_profile_rules() -> None:
    run = replay(BUNDLE, ("driver", "topology"), profile="h200-sxm")
    assert run.above_ok() == ([], [])
    topology = [v for v in run.verdicts if v.rule.startswith("topology.")]
    assert {v.rule for v in topology} == {
        "topology.nvlink_missing",
        "topology.nvlink_degraded",
        "topology.nic_not_paired",
        "topology.affinity_missing",
        "topology.affinity_inconsistent",
        "topology.partial_board",
        "topology.gpus_exceed_board",
    }
    assert all(v.status == Status.OK for v in topology), topology
    (partial,) = run.verdict("topology.partial_board")
    assert partial.message.startswith("2 of the 8 GPUs of one h200-sxm board")


def test_recorded_bundle_end_to_end_picks_the_h200_profile() -> None:
    report = execute(RunRequest(RunConfig(checks=["driver", "topology"]), bundle=str(BUNDLE)))
    assert report.profile == "h200-sxm"  # matched from the GPUs' name and PCI device id
    topology = report.check("topology")
    assert topology is not None and topology.status == Status.OK
    fired = [v.rule for v in report.verdicts if v.status.rank > Status.OK.rank]
    assert not [rule for rule in fired if rule.startswith("topology.")]


# --- fault variants ------------------------------------------------------------------------


def test_sys_pair_with_nvlinks_down_fires_the_fabric_rule(tmp_path: Path) -> None:
    def fabric_down(data: dict[str, Any]) -> None:
        set_links(data, 1, range(18), active=False)
        data["pairs"][0].update(p2p_nvlink=False, common_ancestor="system")

    bundle = variant(tmp_path, recorded_topo().replace("NV18", "SYS"), fabric_down)
    run = replay(bundle, ("driver", "topology"), profile="h200-sxm")
    assert run.above_ok() == ([], ["topology.nvlink_missing"])
    (verdict,) = run.verdict("topology.nvlink_missing")
    assert verdict.status == Status.CRITICAL
    assert "1 GPU pair(s) not on NVLink" in verdict.message
    assert "GPU0–GPU1 SYS" in verdict.message and "fabric manager" in verdict.message
    assert verdict.action and "nvidia-fabricmanager" in verdict.action
    (pair,) = run.topology.facts["pairs"]
    assert pair["on_nvlink"] is False and pair["nvlink"] == 0
    assert run.topology.facts["per_gpu"][1]["nvlink_active"] == 0


def test_sys_pair_while_nvml_shows_nvlink_is_a_disagreement(tmp_path: Path) -> None:
    bundle = variant(tmp_path, recorded_topo().replace("NV18", "SYS"))
    run = replay(bundle, ("topology",))
    assert run.above_ok() == (["topology.nvml_disagrees"], [])
    (finding,) = run.topology.findings
    assert finding.message.startswith("GPU0–GPU1: ")
    assert "topo -m shows SYS but NVML reports NVLink P2P" in finding.message
    assert "common ancestor is hostbridge (PHB)" in finding.message
    assert finding.device is not None and finding.device.pci_bus_id == "0000:00:06.0"


def test_nvlink_in_topo_but_not_in_nvml_is_a_disagreement(tmp_path: Path) -> None:
    bundle = variant(tmp_path, None, lambda d: d["pairs"][0].update(p2p_nvlink=False))
    run = replay(bundle, ("topology",))
    assert run.above_ok() == (["topology.nvml_disagrees"], [])
    assert "shows NV18 but NVML reports no NVLink P2P" in run.topology.findings[0].message


def test_topo_claims_more_links_than_nvml_sees_active(tmp_path: Path) -> None:
    bundle = variant(tmp_path, None, lambda d: set_links(d, 0, range(17, 18), active=False))
    run = replay(bundle, ("topology",))
    assert run.above_ok() == (["topology.nvml_disagrees"], [])
    assert "NV18 but NVML sees 17 active NVLinks on GPU0" in run.topology.findings[0].message


def test_asymmetric_cell(tmp_path: Path) -> None:
    text = recorded_topo().replace("GPU1\tNV18", "GPU1\tNV12")
    bundle = variant(tmp_path, text)
    run = replay(bundle, ("topology",))
    assert run.above_ok() == (["topology.asymmetric"], [])
    (finding,) = run.topology.findings
    assert finding.severity.value == "warning"
    assert "GPU0→GPU1 reads NV18, GPU1→GPU0 reads NV12" in finding.message
    assert run.topology.facts["summary"]["asymmetric"] == 1
    assert run.topology.facts["pairs"][0]["nvlink"] == 12  # the weaker direction counts


def test_gpu_missing_from_the_matrix(tmp_path: Path) -> None:
    text = ANSI_HEADER.replace("\tGPU1", "") + "GPU0\t X \t0-31\t0\t\tN/A\n"
    bundle = variant(tmp_path, text)
    run = replay(bundle, ("topology",))
    assert run.above_ok() == (["topology.gpu_missing"], [])
    (finding,) = run.topology.findings
    assert finding.severity.value == "critical"
    assert finding.device is not None and finding.device.index == 1
    assert finding.device.pci_bus_id == "0000:00:07.0"
    assert "GPU 1 is listed by nvml but missing" in finding.message
    assert run.topology.facts["summary"]["missing_gpus"] == [1]
    assert run.topology.facts["gpus"] == ["GPU0"]


def test_gpu_missing_is_seen_from_nvidia_smi_l_without_nvml(tmp_path: Path) -> None:
    text = ANSI_HEADER.replace("\tGPU1", "") + "GPU0\t X \t0-31\t0\t\tN/A\n"
    bundle = variant(tmp_path, text, drop=("nvml.json",))
    run = replay(bundle, ("topology",))
    assert run.above_ok() == (["topology.gpu_missing"], [])
    assert "listed by nvidia-smi -L" in run.topology.findings[0].message
    assert any("NVML" in note for note in run.topology.not_judged)


def test_nv12_pair_against_the_h200_profile(tmp_path: Path) -> None:
    def six_links_down(data: dict[str, Any]) -> None:
        for gpu in (0, 1):
            set_links(data, gpu, range(12, 18), active=False)

    bundle = variant(tmp_path, recorded_topo().replace("NV18", "NV12"), six_links_down)
    run = replay(bundle, ("driver", "topology"), profile="h200-sxm")
    assert run.above_ok() == ([], ["topology.nvlink_degraded"])
    (verdict,) = run.verdict("topology.nvlink_degraded")
    assert verdict.status == Status.WARNING
    assert verdict.message.startswith("1 GPU pair(s) on fewer NVLinks than NV18")
    assert "GPU0–GPU1 NV12" in verdict.message
    assert run.verdict("topology.nvlink_missing")[0].status == Status.OK


def test_unparsable_topo_is_unknown_with_file_and_line(tmp_path: Path) -> None:
    text = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
    bundle = variant(tmp_path, text)
    run = replay(bundle, ("topology",))
    (finding,) = run.topology.findings
    assert finding.code == "topology.unparsable" and finding.severity.value == "unknown"
    assert finding.message.startswith(f"{bundle}/{TOPO}:1: ")
    assert run.topology.status == Status.UNKNOWN
    # NVML still answers: its view is reported
    assert run.topology.facts["summary"]["gpu_count"] == 2
    assert run.topology.facts["pairs"][0]["nvml_p2p_nvlink"] is True


def test_nvml_alone_is_reported_when_topo_is_absent(tmp_path: Path) -> None:
    bundle = variant(tmp_path, None, drop=(TOPO,))
    run = replay(bundle, ("driver", "topology"), profile="h200-sxm")
    topo = run.topology
    assert topo.status == Status.OK and topo.findings == []
    assert topo.facts["gpus"] == [] and topo.facts["links"] == []
    assert topo.facts["summary"]["gpu_count"] == 2 and topo.facts["summary"]["nvlink_pairs"] == 1
    assert topo.facts["pairs"][0]["nvlink"] is None  # NVML gives no per-pair link count
    assert any("nvidia-smi topo -m" in note for note in topo.not_judged)
    assert run.verdict("topology.nvlink_missing")[0].status == Status.OK
    # the count per pair is not known without the matrix: unknown, never ok
    assert run.verdict("topology.nvlink_degraded")[0].status == Status.UNKNOWN


def test_skipped_when_neither_topo_nor_nvml(tmp_path: Path) -> None:
    bundle = variant(tmp_path, None, drop=(TOPO, "nvml.json"))
    run = replay(bundle, ("topology",))
    assert run.topology.status == Status.SKIPPED
    assert run.topology.skip_reason and "no topology evidence" in run.topology.skip_reason


# --- an 8-GPU board (the H100 sample with NICs), as a bundle without NVML ------------------


def h100_bundle(tmp_path: Path, edit: dict[tuple[str, str], str] | None = None) -> Path:
    """The 8×H100 sample as a bundle with `nvidia-smi -L`; `edit` sets cells (both directions)."""
    lines = H100X8.read_text().splitlines()
    header = lines[0].split("\t")
    for (a, b), kind in (edit or {}).items():
        for row, column in ((a, b), (b, a)):
            at = next(i for i, line in enumerate(lines) if line.startswith(row + "\t"))
            cells = lines[at].split("\t")
            cells[header.index(column)] = kind
            lines[at] = "\t".join(cells)
    folder = tmp_path / "h100"
    folder.mkdir()
    (folder / TOPO).write_text("\n".join(lines) + "\n")
    (folder / "nvidia-smi-L.txt").write_text(
        "".join(
            f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i:08d}-0000-0000-0000-000000000000)\n"
            for i in range(8)
        )
    )
    return folder


def test_h100_board_is_healthy_against_the_nvlink_profile(tmp_path: Path) -> None:
    run = replay(h100_bundle(tmp_path), ("driver", "topology"), profile="h200-sxm")
    assert run.above_ok() == ([], [])
    per_gpu = run.topology.facts["per_gpu"]
    assert [g["nearest_nic"] for g in per_gpu] == [f"mlx5_{i}" for i in range(8)]
    assert {g["nearest_nic_kind"] for g in per_gpu} == {"PXB"}
    assert len(run.verdict("topology.nic_not_paired")) == 1  # one OK for the node


def test_the_fabric_rule_names_the_pair_that_lost_nvlink(tmp_path: Path) -> None:
    bundle = h100_bundle(tmp_path, {("GPU2", "GPU5"): "SYS"})
    run = replay(bundle, ("driver", "topology"), profile="h200-sxm")
    assert run.above_ok() == ([], ["topology.nvlink_missing"])
    (verdict,) = run.verdict("topology.nvlink_missing")
    assert "1 GPU pair(s) not on NVLink" in verdict.message
    assert "first GPU2–GPU5 SYS:" in verdict.message
    assert run.topology.facts["summary"]["pcie_only_pairs"] == 1


def test_a_gpu_whose_nearest_nic_is_not_behind_its_switch(tmp_path: Path) -> None:
    bundle = h100_bundle(tmp_path, {("GPU3", "NIC3"): "NODE"})
    run = replay(bundle, ("driver", "topology"), profile="h200-sxm")
    assert run.above_ok() == ([], ["topology.nic_not_paired"])
    (verdict,) = [v for v in run.verdict("topology.nic_not_paired") if v.status != Status.OK]
    assert verdict.device is not None and verdict.device.index == 3
    assert "GPU 3: nearest NIC mlx5_0 is NODE away" in verdict.message


def test_missing_numa_affinity_is_judged_per_gpu(tmp_path: Path) -> None:
    bundle = h100_bundle(tmp_path)
    text = (bundle / TOPO).read_text().replace("56-111,168-223\t1\t", "56-111,168-223\tN/A\t", 1)
    (bundle / TOPO).write_text(text)
    run = replay(bundle, ("driver", "topology"), profile="h200-sxm")
    assert run.above_ok() == ([], ["topology.affinity_missing"])
    (verdict,) = [v for v in run.verdict("topology.affinity_missing") if v.status != Status.OK]
    assert verdict.device is not None and verdict.device.index == 4
    assert "NUMA affinity N/A" in verdict.message


def test_a_gpu_printing_another_nodes_cpus_is_inconsistent(tmp_path: Path) -> None:
    bundle = h100_bundle(tmp_path)
    lines = (bundle / TOPO).read_text().splitlines()
    lines[7] = lines[7].replace("56-111,168-223", "0-55,112-167")  # GPU6 row, NUMA 1
    (bundle / TOPO).write_text("\n".join(lines) + "\n")
    run = replay(bundle, ("driver", "topology"))  # no profile: consistency needs none
    assert run.above_ok() == ([], ["topology.affinity_inconsistent"])
    (verdict,) = [v for v in run.verdict("topology.affinity_inconsistent") if v.status != Status.OK]
    assert verdict.device is not None and verdict.device.index == 6
    assert "differs from GPU4, GPU5, GPU7 on NUMA node 1" in verdict.message


def test_a_profile_for_a_smaller_board_explains_the_nvlink_verdict(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "profiles").mkdir(parents=True)
    (site / "profiles" / "quad.yaml").write_text(
        "name: quad\ngpus_per_board: 4\nnvlink: {per_pair: 18}\n"
    )
    bundle = h100_bundle(tmp_path, {("GPU2", "GPU5"): "SYS"})
    run = replay(bundle, ("driver", "topology"), profile="quad", site=site)
    codes, fired = run.above_ok()
    assert codes == [] and sorted(fired) == [
        "topology.gpus_exceed_board",
        "topology.nvlink_missing",
    ]
    linked = {v.rule: v for v in mark_explanations(run.verdicts)}
    assert linked["topology.nvlink_missing"].explained_by == ["topology.gpus_exceed_board"]
    assert "8 GPUs, but one quad board holds 4" in linked["topology.gpus_exceed_board"].message


# --- live: NVML (replayed by the fake) and a fake nvidia-smi -------------------------------


def live_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake: FakePynvml) -> LiveSources:
    monkeypatch.setattr(
        Nvml, "load", classmethod(lambda cls, deadline_s=5.0: cls(fake, deadline_s))
    )
    marker = tmp_path / "nvidiactl"
    marker.touch()
    (tmp_path / "bin").mkdir(exist_ok=True)
    options = LiveOptions(
        driver_markers=(str(marker),),
        sample_seconds=0.2,
        sample_interval_s=0.1,
        sys_root=str(tmp_path / "sys"),
        command_timeout_s=5.0,
    )
    return LiveSources(
        options, CommandRunner(path=str(tmp_path / "bin")), installed=installed_evidence
    )


def test_live_reads_nvml_and_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recording = json.loads((BUNDLE / "nvml.json").read_text())
    set_links(recording, 1, range(18), active=False)
    recording["pairs"][0].update(p2p_nvlink=False, common_ancestor="system")
    (tmp_path / "topo.txt").write_text(recorded_topo().replace("NV18", "SYS"))
    write_command(
        tmp_path / "bin",
        "nvidia-smi",
        f'[ "$1 $2" = "topo -m" ] && exec cat {tmp_path / "topo.txt"}\nexit 9',
    )
    live = live_sources(tmp_path, monkeypatch, FakePynvml(recording))
    try:
        (result,) = run_checks(select(discover(), ["topology"], []), live, RunConfig())
    finally:
        live.close()
    assert result.status == Status.OK, result
    (pair,) = result.facts["pairs"]
    assert pair["kind"] == "SYS" and pair["nvml_p2p_nvlink"] is False
    assert pair["nvml_common_ancestor"] == "system"
    assert result.facts["per_gpu"][1]["nvlink_active"] == 0
    assert result.facts["per_gpu"][0]["nvlink_active"] == 18
    assert result.facts["source"]["topo"] == "nvidia-smi topo -m"


def test_live_without_topo_or_nvml_is_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakePynvml(json.loads((BUNDLE / "nvml.json").read_text()))
    fake.fail_init()
    live = live_sources(tmp_path, monkeypatch, fake)  # and no nvidia-smi on its PATH
    try:
        (result,) = run_checks(select(discover(), ["topology"], []), live, RunConfig())
    finally:
        live.close()
    assert result.status == Status.UNKNOWN
    assert result.error and result.error.startswith("no topology evidence: ")
    assert "NVML_ERROR_DRIVER_NOT_LOADED" in result.error
