"""The pure topology judge: every corpus topology, NVML cross-checks, affinity, the rule file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sitscheck.checks.topology.judge import (
    NvmlGpu,
    NvmlPair,
    NvmlView,
    SysfsAffinity,
    TopologyInputs,
    cpu_set,
    judge,
    nvml_view,
)
from sitscheck.checks.topology.parse import parse_topo
from sitscheck.engine.cel import CelEnvironment
from sitscheck.engine.loader import load_profiles, load_rules
from sitscheck.engine.profiles import matches

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
FIXTURES = TESTS / "fixtures" / "topo"
DGX_A100 = "001-dgx-a100-8gpu-nv12-mlx5-names-tabs.txt"
V100_CUBE = "013-8xv100-hybrid-cube-nv1-nv2-old-legend-rst-indent.txt"
TOPO_KEYS = ("gpus", "nics", "nic_legend", "links", "affinity")


def judged(text: str, **inputs: Any) -> Any:
    return judge(TopologyInputs(matrix=parse_topo(text), topo_ref="topo.txt", **inputs))


# --- every topology we hold ------------------------------------------------------------------


def check_one(path: Path) -> None:
    matrix = parse_topo(path.read_text())
    result = judge(TopologyInputs(matrix=matrix, topo_ref=path.name))
    facts = result.facts
    assert {key: facts[key] for key in TOPO_KEYS} == matrix.to_fact()
    assert facts["summary"]["gpu_count"] == len(matrix.gpus)
    n = len(matrix.gpus)
    assert facts["summary"]["pair_count"] == n * (n - 1) // 2
    assert [g["name"] for g in facts["per_gpu"]] == list(matrix.gpus)
    # every real sample is symmetric and shows every GPU: nothing to report without NVML
    assert result.findings == [], path.name


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.txt")), ids=lambda p: p.name)
def test_every_fixture_topology_judges_cleanly(path: Path) -> None:
    check_one(path)


def test_every_corpus_topology_judges_cleanly(corpus: Path) -> None:
    samples = sorted((corpus / "topo").glob("*.txt"))
    assert len(samples) >= 9
    for path in samples:
        check_one(path)


def test_dgx_a100_is_symmetric_nv12_everywhere_with_a_pxb_nic_per_gpu(corpus: Path) -> None:
    text = (corpus / "topo" / DGX_A100).read_text()
    result = judged(text, listed=tuple(range(8)), listed_ref="nvidia-smi -L")
    assert result.findings == [] and result.not_judged == []
    summary = result.facts["summary"]
    assert summary["asymmetric"] == 0
    assert summary["nvlink_pairs"] == 28 and summary["pcie_only_pairs"] == 0
    assert summary["min_nvlink"] == summary["max_nvlink"] == 12
    per_gpu = result.facts["per_gpu"]
    assert {g["nearest_nic_kind"] for g in per_gpu} == {"PXB"}
    assert [g["nearest_nic"] for g in per_gpu] == [
        "mlx5_0", "mlx5_0", "mlx5_2", "mlx5_2", "mlx5_6", "mlx5_6", "mlx5_8", "mlx5_8",
    ]  # fmt: skip
    assert all(g["affinity_present"] and g["affinity_consistent"] for g in per_gpu)


def test_an_edited_dgx_a100_cell_is_asymmetric(corpus: Path) -> None:
    lines = (corpus / "topo" / DGX_A100).read_text().splitlines()
    lines[3] = lines[3].replace("NV12", "SYS", 1)  # GPU2 row: its GPU0 cell
    result = judged("\n".join(lines))
    assert [f.code for f in result.findings] == ["topology.asymmetric"]
    assert "GPU0→GPU2 reads NV12, GPU2→GPU0 reads SYS" in result.findings[0].message


def test_gpu_pairs_of_the_v100_cube_mesh_keep_their_mixed_counts(corpus: Path) -> None:
    result = judged((corpus / "topo" / V100_CUBE).read_text())
    pairs = {(p["a"], p["b"]): p for p in result.facts["pairs"]}
    assert pairs[("GPU0", "GPU1")]["nvlink"] == 2
    assert pairs[("GPU0", "GPU3")]["nvlink"] == 1
    assert pairs[("GPU0", "GPU5")]["nvlink"] == 0 and pairs[("GPU0", "GPU5")]["on_nvlink"] is False
    assert result.facts["summary"]["nvlink_pairs"] == 16


def test_a_topo_p2p_matrix_leaves_the_nvlink_question_open(corpus: Path) -> None:
    result = judged((corpus / "topo" / "008-2gpu-topo-p2p-rw-gns-tabs.txt").read_text())
    (pair,) = result.facts["pairs"]
    assert pair["kind"] == "GNS" and pair["nvlink"] is None and pair["on_nvlink"] is None
    assert result.facts["summary"]["unknown_pairs"] == 1


# --- NVML cross-checks -----------------------------------------------------------------------

V100_BUS = [f"0000:{0x10 + i:02x}:00.0" for i in range(8)]


def cube_nvml(links_from_gpu0: dict[int, int]) -> NvmlView:
    """The V100 cube's GPUs with GPU0's NVLinks ending directly at the given peers."""
    remotes = tuple(V100_BUS[peer] for peer, count in links_from_gpu0.items() for _ in range(count))
    gpus = [NvmlGpu(0, V100_BUS[0], nvlink_links=6, nvlink_active=len(remotes), remotes=remotes)]
    gpus += [NvmlGpu(i, V100_BUS[i]) for i in range(1, 8)]
    return NvmlView(tuple(gpus), (), "fake")


def test_direct_nvlinks_agreeing_with_the_matrix(corpus: Path) -> None:
    result = judged(
        (corpus / "topo" / V100_CUBE).read_text(), nvml=cube_nvml({1: 2, 2: 2, 3: 1, 4: 1})
    )
    assert result.findings == []


def test_direct_nvlinks_counted_per_peer_disagree_with_the_matrix(corpus: Path) -> None:
    result = judged(
        (corpus / "topo" / V100_CUBE).read_text(), nvml=cube_nvml({1: 1, 2: 3, 3: 1, 4: 1})
    )
    messages = sorted(f.message for f in result.findings)
    assert [f.code for f in result.findings] == ["topology.nvml_disagrees"] * 2
    assert messages == [
        "GPU0–GPU1: topo -m shows NV2 but GPU0 has 1 active NVLinks to GPU1",
        "GPU0–GPU2: topo -m shows NV2 but GPU0 has 3 active NVLinks to GPU2",
    ]


def test_a_pcie_kind_the_common_ancestor_contradicts(corpus: Path) -> None:
    text = (corpus / "topo" / "010-4x-a100-pcie-nvlink-bridge-pairs-mlx5-tabs.txt").read_text()
    levels = {(0, 1): "hostbridge", (0, 2): "system", (0, 3): "system", (1, 2): "system",
              (1, 3): "system", (2, 3): "hostbridge"}  # fmt: skip
    pairs = tuple(NvmlPair(a, b, level, (a, b) == (0, 1)) for (a, b), level in levels.items())
    nvml = NvmlView(tuple(NvmlGpu(i, None) for i in range(4)), pairs, "fake")
    result = judged(text, nvml=nvml)
    (finding,) = result.findings
    assert finding.message == (
        "GPU2–GPU3: topo -m shows NODE but NVML's common ancestor is hostbridge (PHB)"
    )


def test_gpus_nvml_does_not_list_and_lost_gpus(corpus: Path) -> None:
    text = (corpus / "topo" / DGX_A100).read_text()
    gpus = tuple(NvmlGpu(i, None, lost=i == 6) for i in range(7))  # GPU7 unlisted, GPU6 lost
    result = judged(text, nvml=NvmlView(gpus, (), "fake"))
    assert [f.message for f in result.findings] == [
        "GPU7 is in the topology matrix but NVML does not list it"
    ]
    assert any("GPU 6 lost" in note for note in result.not_judged)


def test_nvml_view_reads_the_snapshot_shape() -> None:
    snapshot = {
        "gpus": [
            {"index": 0, "pci_bus_id": "0000:00:06.0",
             "nvlink": [{"link": 0, "active": True, "remote_pci_bus_id": "ffffffff:ff:ff.0"},
                        {"link": 1, "active": False}, {"link": 2, "active": None}]},
            {"index": 1, "pci_bus_id": "0000:00:07.0", "unavailable": {"nvlink": "not_supported"},
             "nvlink": [], "lost": {"state": "gpu_lost"}},
        ],
        "pairs": [{"a": 1, "b": 0, "common_ancestor": "system", "p2p_nvlink": None}],
    }  # fmt: skip
    view = nvml_view(snapshot, "nvml")
    assert view is not None
    first, second = view.gpus
    assert (first.nvlink_links, first.nvlink_active, first.nvlink_unknown) == (3, 1, 1)
    assert first.remotes == ("ffffffff:ff:ff.0",)
    assert second.nvlink_active is None and second.lost
    assert view.pair(0, 1) == NvmlPair(0, 1, "system", None)
    assert nvml_view({"error": "NVML_ERROR_UNINITIALIZED", "gpus": []}, "nvml") is None


# --- affinity --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0-3", {0, 1, 2, 3}),
        ("48-49,176-177", {48, 49, 176, 177}),
        ("7", {7}),
        ("N/A", None),
        ("", None),
        ("3-1", None),
        ("0-x", None),
    ],
)
def test_cpu_set(text: str, cpus: set[int] | None) -> None:
    assert cpu_set(text) == (frozenset(cpus) if cpus is not None else None)


def test_sysfs_that_contradicts_the_matrix_makes_affinity_inconsistent() -> None:
    text = (FIXTURES / "h200x2-580-ansi.txt").read_text()  # both GPUs: CPUs 0-15, NUMA 0
    nvml = NvmlView((NvmlGpu(0, "a"), NvmlGpu(1, "b")), (), "fake")
    sysfs = {0: SysfsAffinity(0, "0-15"), 1: SysfsAffinity(1, "16-31")}
    result = judged(text, nvml=nvml, sysfs=sysfs)
    first, second = result.facts["per_gpu"]
    assert first["affinity_consistent"] is True
    assert second["affinity_consistent"] is False
    assert second["affinity_note"] == (
        "CPU affinity 0-15 is outside sysfs local_cpulist 16-31; "
        "NUMA affinity 0 but sysfs numa_node 1"
    )


# --- the rule file and the profile ------------------------------------------------------------


def test_rule_file_loads_and_every_rule_reads_the_topology_check() -> None:
    ruleset = load_rules([REPO / "rules" / "topology.yaml"], CelEnvironment())
    assert len(ruleset.rules) == 7
    for rule in ruleset.rules:
        assert rule.id.startswith("topology.") and "topology" in rule.requires
        assert rule.source or rule.action, rule.id
        if rule.scope == "gpu":
            assert "driver" in rule.requires, rule.id  # GPU scopes come from the driver check
    profiled = {r.id for r in ruleset.rules if "profile" in r.requires}
    assert profiled == {r.id for r in ruleset.rules} - {"topology.affinity_inconsistent"}
    exceed = ruleset.by_id("topology.gpus_exceed_board")
    assert exceed is not None and "topology.nvlink_missing" in exceed.explains


def test_h200_profile_holds_what_the_rules_read_and_matches_the_recorded_gpus() -> None:
    profile = load_profiles([])["h200-sxm"]
    data = profile.data
    assert data["gpus_per_board"] == 8 and data["tdp_w"] == 700 and data["slowdown_c"] == 89
    assert data["nvlink"] == {"links": 18, "per_pair": 18, "link_gbs_per_direction": 25}
    assert data["pcie"] == {"gen": 5, "width": 16}
    assert data["nic_pairing"] == ["PIX", "PXB"]
    assert matches(data, {"name": "NVIDIA H200", "pci_device_id": "233510de"})
    assert not matches(data, {"name": "NVIDIA A100-SXM4-80GB", "pci_device_id": "20b210de"})
