"""Hardware profiles (rules/profiles/*.yaml): the data-sheet numbers, automatic selection by GPU
name and PCI device id, `--profile`, site profiles, and no false alarm on PCIe-only boards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rule_cases import PROFILES, edited, evaluate, fired_on
from sitscheck.engine.loader import load_profiles
from sitscheck.engine.profiles import select_profile
from sitscheck.errors import ConfigError
from sitscheck.models import CheckResult, Status

# name, TDP W, NVLinks per GPU (None: no NVLink block), PCIe gen, HBM GB/s, SM, slowdown °C
DATA_SHEETS: dict[str, tuple[int, int | None, int, int | None, str | None, int]] = {
    "a100-sxm-80gb": (400, 12, 4, 2039, "sm_80", 89),
    "b200": (1000, 18, 5, 8000, "sm_100", 87),
    "h100-pcie": (350, None, 5, 2000, "sm_90", 87),
    "h100-sxm": (700, 18, 5, 3350, "sm_90", 87),
    "h200-sxm": (700, 18, 5, 4800, "sm_90", 89),
    "l40s": (350, None, 4, 864, "sm_89", 88),
}
# As nvidia-smi names them, with the PCI device id NVML reads (device id, then vendor 10de).
GPUS = {
    "a100-sxm-80gb": ("NVIDIA A100-SXM4-80GB", "20b210de"),
    "b200": ("NVIDIA B200", "290110de"),
    "h100-pcie": ("NVIDIA H100 PCIe", "233110de"),
    "h100-sxm": ("NVIDIA H100 80GB HBM3", "233010de"),
    "h200-sxm": ("NVIDIA H200", "233510de"),
    "l40s": ("NVIDIA L40S", "26b910de"),
}


def driver(*gpus: dict[str, Any]) -> list[CheckResult]:
    return [CheckResult(name="driver", status=Status.OK, facts={"gpus": list(gpus)})]


def test_the_data_sheet_numbers() -> None:
    # the GH200's GPU reaches its CPU through NVLink-C2C: a PCIe x1 link by design, no
    # per-GPU TDP of its own (the module's power covers CPU, GPU and memory)
    assert PROFILES["gh200"].data["pcie"] == {"gen": 4, "width": 1}
    assert PROFILES["gh200"].data["sm"] == "sm_90" and "tdp_w" not in PROFILES["gh200"].data
    assert set(PROFILES) - {"gh200"} == set(DATA_SHEETS)
    for name, (tdp, links, gen, hbm, sm, slowdown) in DATA_SHEETS.items():
        data = PROFILES[name].data
        assert data["tdp_w"] == tdp, name
        assert (data.get("nvlink") or {}).get("links") == links, name
        assert data["pcie"] == {"gen": gen, "width": 16}, name
        assert data.get("hbm_bw_gbs") == hbm, name
        assert data.get("sm") == sm, name
        assert data["slowdown_c"] == slowdown, name


def test_nvlink_blocks_describe_boards_joining_every_pair() -> None:
    """topology.yaml: `nvlink.per_pair` only where every GPU pair is on NVLink; a 0 there (or
    a link count on optional bridges) would make PCIe-only pairs read as a fabric down."""
    for profile in PROFILES.values():
        nvlink = profile.data.get("nvlink")
        if nvlink is None:
            assert "gpus_per_board" not in profile.data, profile.name
            continue
        assert nvlink["per_pair"] == nvlink["links"] > 0, profile.name
        assert profile.data["gpus_per_board"] == 8, profile.name


@pytest.mark.parametrize("name", sorted(GPUS))
def test_selected_by_name_and_by_pci_device_id(name: str) -> None:
    gpu_name, device_id = GPUS[name]
    by_name = select_profile(PROFILES, None, driver({"index": 0, "name": gpu_name}))
    by_id = select_profile(PROFILES, None, driver({"index": 0, "pci_device_id": device_id}))
    assert by_name is not None and by_name.name == name
    assert by_id is not None and by_id.name == name


@pytest.mark.parametrize(
    "gpu_name",
    ["NVIDIA GB200", "NVIDIA A100-SXM4-40GB", "NVIDIA L40", "NVIDIA H100 NVL", "NVIDIA A10"],
)
def test_other_gpus_get_no_profile(gpu_name: str) -> None:
    assert select_profile(PROFILES, None, driver({"index": 0, "name": gpu_name})) is None


def test_a_mixed_node_gets_no_profile() -> None:
    results = driver({"index": 0, "name": "NVIDIA H200"}, {"index": 1, "name": "NVIDIA L40S"})
    assert select_profile(PROFILES, None, results) is None


def test_the_profile_option_wins_and_must_name_a_profile() -> None:
    results = driver({"index": 0, "name": "NVIDIA H200"})
    chosen = select_profile(PROFILES, "h100-sxm", results)
    assert chosen is not None and chosen.name == "h100-sxm"
    with pytest.raises(ConfigError, match="no such profile"):
        select_profile(PROFILES, "h300", results)


def test_a_site_profile_overrides_keys_and_params_of_a_built_in_one(tmp_path: Path) -> None:
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "h200.yaml").write_text(
        "name: h200-sxm\ntdp_w: 600\nparams:\n  temp_dfs_c: 80\n"
    )
    (tmp_path / "profiles" / "h200-nvl.yaml").write_text(
        "name: h200-nvl\nmatch:\n  names: ['H200 NVL']\ntdp_w: 600\npcie: {gen: 5, width: 16}\n"
    )
    profiles = load_profiles([tmp_path])
    h200 = profiles["h200-sxm"]
    assert h200.data["tdp_w"] == 600
    # kept from the built-in
    assert h200.data["nvlink"] == {"links": 18, "per_pair": 18, "link_gbs_per_direction": 25}
    assert h200.params == {"temp_dfs_c": 80}
    assert "h200-nvl" in profiles


@pytest.mark.parametrize(
    ("name", "gbs"), [("h200-sxm", 25), ("h100-sxm", 25), ("a100-sxm-80gb", 25), ("b200", 50)]
)
def test_nvlink_boards_give_their_link_rate_per_direction(name: str, gbs: int) -> None:
    # NVIDIA's figures: NVLink 3/4 50 GB/s per link both ways, NVLink 5 100 GB/s
    assert PROFILES[name].data["nvlink"]["link_gbs_per_direction"] == gbs
    assert PROFILES[name].params == {}


@pytest.mark.parametrize("name", ["l40s", "h100-pcie"])
def test_pcie_boards_are_not_called_fabric_down(name: str, idle_results: list[CheckResult]) -> None:
    """Two PCIe cards without NVLink: the pair reads SYS/PHB and NVML shows no link up."""
    results = edited(
        idle_results,
        {
            "topology": {"pairs.0.on_nvlink": False, "pairs.0.nvlink": 0, "pairs.0.kind": "PHB"},
            "nvlink@0": {"inactive_links": list(range(12)), "links_active": 0},
            "nvlink@1": {"inactive_links": list(range(12)), "links_active": 0},
        },
    )
    verdicts = evaluate(results, PROFILES[name])
    for rule in (
        "topology.nvlink_missing",
        "topology.nvlink_degraded",
        "nvlink.links_below_profile",
        "quick_check.nvlink_down_fabric",
    ):
        assert fired_on(verdicts, rule) == [], rule
    assert not [v for v in verdicts if v.status == Status.UNKNOWN and v.rule.startswith("quick")]
