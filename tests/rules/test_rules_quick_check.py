"""rules/quick-check.yaml rule by rule: each fires on the facts it names and keeps quiet on
healthy ones and on the neighbouring cases another rule owns.

The facts are the recorded idle 2×H200 bundle's own check results, edited per case (dotted
paths into a check's per-GPU entry, or into its node facts). The whole built-in rule set is
loaded, as in a run (params are shared across rule files), and the h200-sxm profile applies
unless a case names another.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rule_cases import (
    ENV,
    PROFILES,
    RULESET,
    Case,
    assert_fires_exactly,
    edited,
    evaluate,
    fired_on,
    merge,
    profile_of,
    stats,
    telemetry,
)
from sitscheck.engine.evaluate import evaluate_rules
from sitscheck.engine.loader import builtin_rules_dir, load_rules, rule_files
from sitscheck.models import CheckResult, Severity, Status

QUICK = load_rules([builtin_rules_dir() / "quick-check.yaml"], ENV)
QUICK_IDS = [rule.id for rule in QUICK.rules]


# Both GPUs under a dense bf16 GEMM, as recorded on real H200s (at the cap, reason 0x4).
FULL_LOAD = {
    "util_gpu_pct": stats(97.0),
    "tensor_active_pct": stats(92.0),
    "sm_util_pct": stats(95.0),
    "power_w": {"min": 686.0, "mean": 691.0, "p95": 695.0, "max": 699.0},
    "sm_clock_mhz": stats(1510.0),
    "temp_c": stats(55.0),
    "clock_reasons.gpu_idle": 0.0,
    "clock_reasons.sw_power_cap": 1.0,
}
BUSY = {"util_gpu_pct": stats(95.0), "clock_reasons.gpu_idle": 0.0}
NO_REASONS = {"clock_reasons.sw_power_cap": 0.0, "sm_clock_mhz": stats(1980.0)}


ALL_INACTIVE = {"inactive_links": list(range(18)), "links_active": 0}
FABRIC_DOWN = {
    "topology": {
        "pairs.0.on_nvlink": False,
        "pairs.0.kind": "SYS",
        "pairs.0.nvlink": 0,
        "pairs.0.label": "GPU0–GPU1 SYS",
    }
}

CASES = [
    # ---------------------------------------------------------------- link width
    Case(
        "slot wired x8",
        "quick_check.pcie_width_below_x16",
        {"pcie_link@1": {"width_current": 8, "width_max": 8}},
        (1,),
    ),
    Case("x16 link", "quick_check.pcie_width_below_x16", {}),
    Case(
        "downtrained x8 of x16 is the check's finding, not this rule's",
        "quick_check.pcie_width_below_x16",
        {"pcie_link@1": {"width_current": 8, "width_degraded": True}},
    ),
    Case(
        "a profile expecting x8",
        "quick_check.pcie_width_below_x16",
        {"pcie_link@1": {"width_current": 8, "width_max": 8}},
        profile={"name": "x8-card", "pcie": {"width": 8}},
    ),
    Case(
        "no profile: the seed's x16",
        "quick_check.pcie_width_below_x16",
        {"pcie_link@0": {"width_current": 4, "width_max": 4}},
        (0,),
        profile=None,
    ),
    # ---------------------------------------------------------------- power at full load
    Case(
        "full load at 520 W of 700 at max clocks",
        "quick_check.power_off_tdp_full_load",
        telemetry(1, FULL_LOAD, NO_REASONS, {"power_w": stats(520.0)}),
        (1,),
    ),
    Case(
        "full load at 830 W of 700 (below the 20 % over-limit rule)",
        "quick_check.power_off_tdp_full_load",
        telemetry(0, FULL_LOAD, {"power_w": stats(830.0)}),
        (0,),
    ),
    Case(
        "full load at the 700 W cap with SW power cap (a healthy H200)",
        "quick_check.power_off_tdp_full_load",
        merge(telemetry(0, FULL_LOAD), telemetry(1, FULL_LOAD)),
    ),
    Case(
        "memory-bound: 100 % busy, 4 % tensor activity, 430 W",
        "quick_check.power_off_tdp_full_load",
        telemetry(
            0,
            FULL_LOAD,
            NO_REASONS,
            {"tensor_active_pct": stats(4.0), "power_w": stats(430.0)},
        ),
    ),
    Case(
        "idle at 78 W",
        "quick_check.power_off_tdp_full_load",
        {},
    ),
    Case(
        "a site's deliberate 450 W cap, drawn at full load",
        "quick_check.power_off_tdp_full_load",
        telemetry(0, FULL_LOAD, {"power_w": stats(446.0), "power_limit_w": 450.0}),
    ),
    Case(
        "HW slowdown cuts the power (gpu_telemetry.hw_slowdown_busy's)",
        "quick_check.power_off_tdp_full_load",
        telemetry(0, FULL_LOAD, {"power_w": stats(505.0), "clock_reasons.hw_slowdown": 1.0}),
    ),
    Case(
        "below half the TDP (gpu_telemetry.power_low_busy's)",
        "quick_check.power_off_tdp_full_load",
        telemetry(0, FULL_LOAD, NO_REASONS, {"power_w": stats(300.0)}),
    ),
    Case(
        "no GPM tensor activity (before Hopper): full load not told",
        "quick_check.power_off_tdp_full_load",
        telemetry(0, FULL_LOAD, NO_REASONS, {"power_w": stats(520.0), "tensor_active_pct": None}),
    ),
    Case(
        "a site widens the band to ±30 %",
        "quick_check.power_off_tdp_full_load",
        telemetry(1, FULL_LOAD, NO_REASONS, {"power_w": stats(520.0)}),
        site={"power_tdp_band_ratio": 0.3},
    ),
    # ---------------------------------------------------------------- 0 W
    Case(
        "idle GPU reads 0 W",
        "quick_check.power_zero_sustained",
        telemetry(1, {"power_w": stats(0.0)}),
        (1,),
    ),
    Case("idle GPU at 78 W", "quick_check.power_zero_sustained", {}),
    Case(
        "busy GPU at 0 W (gpu_telemetry.power_zero_busy's)",
        "quick_check.power_zero_sustained",
        telemetry(1, BUSY, {"power_w": stats(0.0)}),
    ),
    Case(
        "one sample above 0 W is not sustained",
        "quick_check.power_zero_sustained",
        telemetry(1, {"power_w": {"min": 0.0, "mean": 6.0, "p95": 78.0, "max": 78.0}}),
    ),
    # ---------------------------------------------------------------- HBM bandwidth
    Case(
        "GPM DRAM bandwidth 95 %",
        "quick_check.hbm_bandwidth_bound",
        telemetry(0, BUSY, {"dram_bw_util_pct": stats(95.0)}),
        (0,),
    ),
    Case(
        "DRAM bandwidth 60 %",
        "quick_check.hbm_bandwidth_bound",
        telemetry(0, BUSY, {"dram_bw_util_pct": stats(60.0)}),
    ),
    Case(
        "no GPM: NVML memory utilisation 94 % (dmon's mem column)",
        "quick_check.hbm_bandwidth_bound",
        telemetry(0, BUSY, {"dram_bw_util_pct": None, "util_mem_pct": stats(94.0)}),
        (0,),
    ),
    Case("idle", "quick_check.hbm_bandwidth_bound", {}),
    # ---------------------------------------------------------------- NVLink bandwidth
    Case(
        "NVLink 400 GB/s one way on 18 NVLink-4 links (450 GB/s)",
        "quick_check.nvlink_bandwidth_bound",
        telemetry(
            0,
            BUSY,
            {"nvlink_rx_bytes_per_s": stats(400e9), "nvlink_tx_bytes_per_s": stats(120e9)},
        ),
        (0,),
    ),
    Case(
        "NVLink 200 GB/s",
        "quick_check.nvlink_bandwidth_bound",
        telemetry(
            0,
            BUSY,
            {"nvlink_rx_bytes_per_s": stats(200e9), "nvlink_tx_bytes_per_s": stats(200e9)},
        ),
    ),
    Case(
        "400 GB/s on a B200's NVLink 5 (900 GB/s one way)",
        "quick_check.nvlink_bandwidth_bound",
        telemetry(
            0,
            BUSY,
            {"nvlink_rx_bytes_per_s": stats(400e9), "nvlink_tx_bytes_per_s": stats(400e9)},
        ),
        profile="b200",
    ),
    Case(
        "383 GB/s: just past 85 % of 450",
        "quick_check.nvlink_bandwidth_bound",
        telemetry(
            0, BUSY, {"nvlink_rx_bytes_per_s": stats(0.0), "nvlink_tx_bytes_per_s": stats(383e9)}
        ),
        (0,),
    ),
    Case(
        "382 GB/s: just under 85 % of 450",
        "quick_check.nvlink_bandwidth_bound",
        telemetry(
            0, BUSY, {"nvlink_rx_bytes_per_s": stats(382e9), "nvlink_tx_bytes_per_s": stats(0.0)}
        ),
    ),
    Case(
        "300 GB/s on 13 active links (325 GB/s one way)",
        "quick_check.nvlink_bandwidth_bound",
        merge(
            telemetry(
                1,
                BUSY,
                {"nvlink_rx_bytes_per_s": stats(300e9), "nvlink_tx_bytes_per_s": stats(1e9)},
            ),
            {"nvlink@1": {"links_active": 13}},
        ),
        (1,),
    ),
    Case(
        "a profile without a link rate: capacity unknown, not judged",
        "quick_check.nvlink_bandwidth_bound",
        telemetry(
            0, BUSY, {"nvlink_rx_bytes_per_s": stats(440e9), "nvlink_tx_bytes_per_s": stats(0.0)}
        ),
        profile={"name": "bridged-card", "nvlink": {"links": 18}},
    ),
    Case(
        "no active NVLink",
        "quick_check.nvlink_bandwidth_bound",
        merge(
            telemetry(
                0,
                BUSY,
                {"nvlink_rx_bytes_per_s": stats(440e9), "nvlink_tx_bytes_per_s": stats(0.0)},
            ),
            {"nvlink@0": ALL_INACTIVE},
        ),
    ),
    Case(
        "an idle node recorded before NVLink throughput was read",
        "quick_check.nvlink_bandwidth_bound",
        {},
    ),
    # ---------------------------------------------------------------- thermal
    Case(
        "85 °C with SW thermal slowdown",
        "quick_check.thermal_dfs",
        telemetry(0, BUSY, {"temp_c": stats(85.0), "clock_reasons.sw_thermal_slowdown": 0.6}),
        (0,),
    ),
    Case(
        "85 °C, clocks not cut",
        "quick_check.thermal_dfs",
        telemetry(0, BUSY, {"temp_c": stats(85.0)}),
    ),
    Case(
        "76 °C with SW thermal slowdown (below the seed's 83 °C)",
        "quick_check.thermal_dfs",
        telemetry(0, BUSY, {"temp_c": stats(76.0), "clock_reasons.sw_thermal_slowdown": 0.6}),
    ),
    Case(
        "a site moves the point to 88 °C",
        "quick_check.thermal_dfs",
        telemetry(0, BUSY, {"temp_c": stats(85.0), "clock_reasons.sw_thermal_slowdown": 0.6}),
        site={"temp_dfs_c": 88},
    ),
    # ---------------------------------------------------------------- degraded link
    Case(
        "x8 of x16 with corrected AER on the path",
        "quick_check.degraded_link_aer",
        {
            "pcie_link@1": {"width_current": 8, "width_degraded": True},
            "pcie_aer@1": {"events.corrected": 3},
        },
        (1,),
    ),
    Case(
        "Gen4 of Gen5 while busy with a non-fatal AER error",
        "quick_check.degraded_link_aer",
        merge(
            telemetry(0, BUSY),
            {
                "pcie_link@0": {"gen_current": 4, "gen_below_max": True},
                "pcie_aer@0": {"events.nonfatal": 1},
            },
        ),
        (0,),
    ),
    Case(
        "x8 of x16 counted only in sysfs AER counters",
        "quick_check.degraded_link_aer",
        {
            "pcie_link@1": {"width_current": 8, "width_degraded": True},
            "pcie_aer@1": {"counters": {"correctable": 7, "nonfatal": 0, "fatal": 0}},
        },
        (1,),
    ),
    Case(
        "x8 of x16, no AER",
        "quick_check.degraded_link_aer",
        {"pcie_link@1": {"width_current": 8, "width_degraded": True}},
    ),
    Case(
        "AER on a full-width link",
        "quick_check.degraded_link_aer",
        {"pcie_aer@1": {"events.corrected": 3}},
    ),
    Case(
        "Gen4 of Gen5 while idle (power saving) with AER",
        "quick_check.degraded_link_aer",
        {
            "pcie_link@0": {"gen_current": 4, "gen_below_max": True},
            "pcie_aer@0": {"events.corrected": 2},
        },
    ),
    # ---------------------------------------------------------------- signal integrity
    Case(
        "replays +12 in the window and 40 corrected AER errors",
        "quick_check.pcie_signal_integrity",
        {
            "pcie_link@0": {"replay_delta": 12, "replay_per_min": 240.0},
            "pcie_aer@0": {"events.corrected": 40, "corrected_per_min": 48.0},
        },
        (0,),
    ),
    Case(
        "one replay is no rate",
        "quick_check.pcie_signal_integrity",
        {
            "pcie_link@0": {"replay_delta": 1, "replay_per_min": 20.0},
            "pcie_aer@0": {"events.corrected": 40},
        },
    ),
    Case(
        "replays without corrected AER",
        "quick_check.pcie_signal_integrity",
        {"pcie_link@0": {"replay_delta": 12, "replay_per_min": 240.0}},
    ),
    Case(
        "replay counter read once (nvidia-smi only)",
        "quick_check.pcie_signal_integrity",
        {
            "pcie_link@0": {"replay_delta": None, "replay_per_min": None},
            "pcie_aer@0": {"events.corrected": 40},
        },
    ),
    # ---------------------------------------------------------------- Xid 79
    Case(
        "Xid 79 with a fatal AER error on the path",
        "quick_check.fell_off_bus_pcie",
        {
            "xid@1": {"xids": {"79": 1}, "fallen_off_bus": True, "critical": True},
            "pcie_aer@1": {"events.fatal": 1},
        },
        (1,),
    ),
    Case(
        "Xid 79 with fatal errors in the sysfs counters only",
        "quick_check.fell_off_bus_pcie",
        {
            "xid@1": {"xids": {"79": 1}, "fallen_off_bus": True},
            "pcie_aer@1": {"counters": {"correctable": 0, "nonfatal": 0, "fatal": 2}},
        },
        (1,),
    ),
    Case(
        "Xid 79 alone (power, thermals: not the PCIe layer's)",
        "quick_check.fell_off_bus_pcie",
        {"xid@1": {"xids": {"79": 1}, "fallen_off_bus": True}},
    ),
    Case(
        "fatal AER without Xid 79",
        "quick_check.fell_off_bus_pcie",
        {"pcie_aer@1": {"events.fatal": 1}},
    ),
    # ---------------------------------------------------------------- memory
    Case(
        "Xid 48 and a volatile uncorrected ECC error",
        "quick_check.memory_dbe_confirmed",
        {"xid@0": {"xids": {"48": 1}}, "memory_errors@0": {"ecc_volatile_uncorrected": 1}},
        (0,),
    ),
    Case(
        "Xid 64 and a remap failure",
        "quick_check.memory_dbe_confirmed",
        {"xid@0": {"xids": {"64": 2}}, "memory_errors@0": {"remap_failure": True}},
        (0,),
    ),
    Case(
        "Xid 48 from before the counters were reset (counters clean)",
        "quick_check.memory_dbe_confirmed",
        {"xid@0": {"xids": {"48": 1}}},
    ),
    Case(
        "uncorrected ECC without a memory Xid",
        "quick_check.memory_dbe_confirmed",
        {"memory_errors@0": {"ecc_volatile_uncorrected": 1}},
    ),
    Case(
        "Xid 63 and a pending remap",
        "quick_check.memory_remap_confirmed",
        {"xid@1": {"xids": {"63": 1}}, "memory_errors@1": {"remap_pending": True}},
        (1,),
    ),
    Case(
        "Xid 63 after the reset (nothing pending)",
        "quick_check.memory_remap_confirmed",
        {"xid@1": {"xids": {"63": 1}}},
    ),
    Case(
        "pending remap without Xid 63 in the log",
        "quick_check.memory_remap_confirmed",
        {"memory_errors@1": {"remap_pending": True}},
    ),
    # ---------------------------------------------------------------- NVLink fabric
    Case(
        "SYS between the GPUs and every NVLink inactive",
        "quick_check.nvlink_down_fabric",
        merge(FABRIC_DOWN, {"nvlink@0": ALL_INACTIVE, "nvlink@1": ALL_INACTIVE}),
        (0, 1),
    ),
    Case(
        "SYS between the GPUs, GPU 0's links inactive",
        "quick_check.nvlink_down_fabric",
        merge(FABRIC_DOWN, {"nvlink@0": ALL_INACTIVE}),
        (0,),
    ),
    Case(
        "SYS but every NVLink active (topology.nvlink_missing's alone)",
        "quick_check.nvlink_down_fabric",
        FABRIC_DOWN,
    ),
    Case(
        "one inactive link on an NV18 pair",
        "quick_check.nvlink_down_fabric",
        {"nvlink@0": {"inactive_links": [5], "links_active": 17}},
    ),
    Case(
        "PCIe cards (l40s: no NVLink) reached over SYS",
        "quick_check.nvlink_down_fabric",
        merge(FABRIC_DOWN, {"nvlink@0": ALL_INACTIVE}),
        profile="l40s",
    ),
    Case(
        "unknown pair state (null on_nvlink)",
        "quick_check.nvlink_down_fabric",
        merge({"topology": {"pairs.0.on_nvlink": None}}, {"nvlink@0": ALL_INACTIVE}),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.rule}: {c.name}" for c in CASES])
def test_rule_fires_exactly_where_it_should(case: Case, idle_results: list[CheckResult]) -> None:
    mine = assert_fires_exactly(case, idle_results)
    rule = RULESET.by_id(case.rule)
    assert rule is not None
    for verdict in mine:
        if verdict.device is not None:
            assert verdict.status == rule.severity.as_status()
            assert verdict.source


def test_every_rule_has_a_case_that_fires_and_one_that_keeps_it_quiet() -> None:
    firing = {c.rule for c in CASES if c.fires_on}
    quiet = {c.rule for c in CASES if not c.fires_on}
    assert set(QUICK_IDS) <= firing, set(QUICK_IDS) - firing
    assert set(QUICK_IDS) <= quiet, set(QUICK_IDS) - quiet


def test_the_idle_h200_fires_nothing_and_judges_everything(
    idle_results: list[CheckResult],
) -> None:
    verdicts = evaluate(idle_results, PROFILES["h200-sxm"])
    for verdict in verdicts:
        if verdict.rule in QUICK_IDS:
            assert verdict.status == Status.OK and verdict.device is None, verdict


def test_nulls_in_facts_read_as_unknown_values_never_as_errors(
    idle_results: list[CheckResult],
) -> None:
    """A null the checks report (an AER rate or counters they could not read) leaves every
    quick-check rule judged, whether or not the engine drops nulls first."""
    results = edited(idle_results, {"pcie_aer@0": {"counters": {}}, "pcie_aer@1": {}})
    for result in results:
        if result.name == "pcie_aer":
            for gpu in result.facts["gpus"]:
                gpu.update(corrected_per_min=None, counters=None, link_gen_max=None)
        if result.name == "topology":
            result.facts["pairs"][0].update(nvlink=None, on_nvlink=None)
    verdicts = evaluate(results, PROFILES["h200-sxm"])
    unknown = [
        (v.rule, v.reason) for v in verdicts if v.rule in QUICK_IDS and v.status.value == "unknown"
    ]
    assert unknown == []


def test_every_rule_names_its_source_action_layer_and_meaning() -> None:
    for rule in QUICK.rules:
        assert rule.source and rule.description, rule.id
        assert rule.action, rule.id
        assert rule.id.startswith("quick_check."), rule.id
        for code in rule.explains:
            assert code != rule.id


def test_cross_validations_sit_below_what_they_explain() -> None:
    """A cause is on the same layer as its symptoms or below (hardware → driver → runtime)."""
    order = {"hardware": 0, "driver": 1, "runtime": 2}
    for rule in QUICK.rules:
        for code in rule.explains:
            symptom = RULESET.by_id(code)
            if symptom is not None:
                assert order[rule.layer.value] <= order[symptom.layer.value], (rule.id, code)


def test_every_explained_rule_id_exists() -> None:
    """`explains` names rule ids of the rule set or finding codes of the checks."""
    from sitscheck.contract.declarations import declaration_of
    from sitscheck.contract.registry import discover

    CODES = {spec.code for c in discover() if c.name != "xid" for spec in declaration_of(c).codes}
    for rule in QUICK.rules:
        for code in rule.explains:
            known = RULESET.by_id(code) is not None or code in CODES or code.startswith("xid.")
            assert known, (rule.id, code)


def test_a_cause_marks_its_symptoms_on_the_same_gpu_only(
    idle_results: list[CheckResult],
) -> None:
    edits = {
        "pcie_link@1": {"width_current": 8, "width_degraded": True},
        "pcie_aer@1": {"events.corrected": 40, "corrected_per_min": 48.0},
        "pcie_link@0": {"replay_delta": 12, "replay_per_min": 240.0},
        "pcie_aer@0": {"events.corrected": 2},
    }
    verdicts = evaluate(edited(idle_results, edits), PROFILES["h200-sxm"])
    fired = {
        (v.rule, v.device.index if v.device else None): v.explained_by
        for v in verdicts
        if v.status in (Status.WARNING, Status.CRITICAL)
    }
    assert fired[("quick_check.degraded_link_aer", 1)] == []
    assert fired[("pcie_aer.corrected_rate", 1)] == ["quick_check.degraded_link_aer"]
    assert fired[("quick_check.pcie_signal_integrity", 0)] == []
    assert fired[("pcie_link.replay_rate", 0)] == ["quick_check.pcie_signal_integrity"]


def test_a_site_file_overrides_a_threshold_without_copying_a_rule(
    tmp_path: Path, idle_results: list[CheckResult]
) -> None:
    site = tmp_path / "site.yaml"
    site.write_text("params:\n  temp_dfs_c: 88\n  hbm_bw_bound_pct: 80\n")
    ruleset = load_rules(rule_files([site]), ENV)
    assert ruleset.site_params == {"temp_dfs_c": 88, "hbm_bw_bound_pct": 80}
    assert {r.id for r in ruleset.rules} == {r.id for r in RULESET.rules}
    results = edited(
        idle_results,
        telemetry(
            0,
            BUSY,
            {
                "temp_c": stats(85.0),
                "clock_reasons.sw_thermal_slowdown": 0.6,
                "dram_bw_util_pct": stats(85.0),
            },
        ),
    )
    verdicts = evaluate_rules(ruleset, results, PROFILES["h200-sxm"], ENV)
    assert fired_on(verdicts, "quick_check.thermal_dfs") == []
    assert fired_on(verdicts, "quick_check.hbm_bandwidth_bound") == [0]


def test_without_a_profile_the_nvlink_capacity_is_unknown(
    idle_results: list[CheckResult],
) -> None:
    results = edited(
        idle_results,
        telemetry(
            0, BUSY, {"nvlink_rx_bytes_per_s": stats(440e9), "nvlink_tx_bytes_per_s": stats(0.0)}
        ),
    )
    mine = [v for v in evaluate(results, None) if v.rule == "quick_check.nvlink_bandwidth_bound"]
    assert [(v.status, v.reason) for v in mine] == [
        (Status.SKIPPED, "no hardware profile selected")
    ]


def test_site_params_win_over_a_profiles_params(idle_results: list[CheckResult]) -> None:
    results = edited(
        idle_results,
        telemetry(
            0, BUSY, {"nvlink_rx_bytes_per_s": stats(400e9), "nvlink_tx_bytes_per_s": stats(0.0)}
        ),
    )
    h200 = PROFILES["h200-sxm"].data
    lenient = profile_of({**h200, "name": "lenient", "params": {"nvlink_bw_bound_pct": 95}})
    assert fired_on(evaluate(results, lenient), "quick_check.nvlink_bandwidth_bound") == []
    site = {"nvlink_bw_bound_pct": 85}
    assert fired_on(evaluate(results, lenient, site), "quick_check.nvlink_bandwidth_bound") == [0]


def test_every_number_is_a_param() -> None:
    params = RULESET.params
    expected = {
        "pcie_expected_width": 16,
        "pcie_x8_throughput_pct": 70,
        "pcie_x16_throughput_pct": 95,
        "power_tdp_band_ratio": 0.15,
        "hbm_bw_bound_pct": 92,
        "nvlink_bw_bound_pct": 85,
        "temp_dfs_c": 83,
    }
    assert {k: params[k] for k in expected} == expected
    # shared with gpu-health.yaml, not redefined here
    for shared in (
        "busy_util_pct",
        "power_zero_w",
        "power_low_busy_ratio",
        "pcie_replay_min_events",
    ):
        assert shared in params
        assert shared not in QUICK.params


def test_info_rules_never_change_a_status(idle_results: list[CheckResult]) -> None:
    results = edited(idle_results, telemetry(0, BUSY, {"dram_bw_util_pct": stats(99.0)}))
    verdicts = evaluate(results, PROFILES["h200-sxm"])
    hbm = [v for v in verdicts if v.rule == "quick_check.hbm_bandwidth_bound" and v.device]
    assert [v.status for v in hbm] == [Status.OK]
    assert "99 %" in hbm[0].message
    assert RULESET.by_id("quick_check.hbm_bandwidth_bound").severity == Severity.INFO  # type: ignore[union-attr]
