"""Every rule of every shipped rule file fires on the facts it names and keeps quiet on healthy
ones: the registry of cases below (rules/quick-check.yaml's are in test_rules_quick_check.py).

Each case edits the check results of a real bundle, as test_rules_quick_check.py does:

- `idle`: the recorded idle 2×H200 (tests/bundles/h200x2-idle-v0);
- `seed`: the scenario of the seed's worked example (a TensorRT engine built on an A100, its
  layer fallen back, on a busy GPU 0: tests/bundles/scenarios/seed-worked-example);
- `bw-nvlink`, `bw-shared`, `bw-pcie`: the recorded 2×H200 with the recorded H200's bandwidth
  figures, its pair over NVLink, behind one PCIe switch port, or over PCIe
  (tests/bandwidth_bundles.py);
- `ib`: the recorded 2×H200 with eight NDR HCAs as the kernel shows them; `ib-paired`: with
  one HCA behind each GPU in the topology matrix (tests/infiniband/ib_tree.py).

The whole built-in rule set is loaded, as in a run, and the h200-sxm profile applies unless a
case names another.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bandwidth_bundles import facts_variants
from rule_cases import (
    PROFILES,
    RULESET,
    Case,
    assert_fires_exactly,
    merge,
    stats,
    telemetry,
)
from rule_scenarios import BUNDLES, materialise, replay
from sitscheck.models import CheckResult
from test_rules_quick_check import CASES as QUICK_CASES

TESTS = Path(__file__).resolve().parent.parent
if str(TESTS / "infiniband") not in sys.path:
    sys.path.insert(0, str(TESTS / "infiniband"))
from ib_tree import Bundle, eight_ndr_hcas, paired_bundle  # noqa: E402

BASES: dict[str, Callable[[Path], Path]] = {
    "idle": lambda scratch: BUNDLES / "h200x2-idle-v0",
    "seed": lambda scratch: materialise("seed-worked-example", scratch / "seed"),
    "bw-nvlink": lambda scratch: facts_variants(scratch)[0],
    "bw-shared": lambda scratch: facts_variants(scratch)[1],
    "bw-pcie": lambda scratch: facts_variants(scratch)[2],
    "ib": lambda scratch: Bundle.of(scratch, eight_ndr_hcas()).write(),
    "ib-paired": lambda scratch: paired_bundle(scratch).write(),
}

BUSY = {"util_gpu_pct": stats(95.0), "clock_reasons.gpu_idle": 0.0}
GEN4_OF_5 = {"gen_below_max": True, "gen_current": 4}
H200_NO_IB_RATE = {k: v for k, v in PROFILES["h200-sxm"].data.items() if k != "ib_rate_gbps"}


def node(check: str, **values: Any) -> dict[str, dict[str, Any]]:
    """Edits of a check's node facts (dotted paths, `__` for `.`)."""
    return {check: {path.replace("__", "."): value for path, value in values.items()}}


CASES = [
    # ------------------------------------------------------------ rules/gpu-health.yaml
    Case(
        "busy at Gen4 of Gen5",
        "pcie_link.gen_below_max_busy",
        merge({"pcie_link@0": GEN4_OF_5}, telemetry(0, BUSY)),
        (0,),
    ),
    Case("idle at Gen4 of Gen5", "pcie_link.gen_below_max_busy", {"pcie_link@0": GEN4_OF_5}),
    Case("idle at Gen4 of Gen5", "pcie_link.gen_not_judged_idle", {"pcie_link@1": GEN4_OF_5}, (1,)),
    Case(
        "busy at Gen4 of Gen5",
        "pcie_link.gen_not_judged_idle",
        merge({"pcie_link@1": GEN4_OF_5}, telemetry(1, BUSY)),
    ),
    Case(
        "240 replays/min on Gen5",
        "pcie_link.replay_rate",
        {"pcie_link@0": {"replay_delta": 12, "replay_per_min": 240.0}},
        (0,),
    ),
    Case(
        "one replay in a 3 s window is no rate",
        "pcie_link.replay_rate",
        {"pcie_link@0": {"replay_delta": 1, "replay_per_min": 20.0}},
    ),
    Case(
        "30 replays/min, inside Gen5's budget",
        "pcie_link.replay_rate",
        {"pcie_link@1": {"replay_delta": 2, "replay_per_min": 30.0}},
    ),
    Case(
        "HW slowdown a quarter of the busy window",
        "gpu_telemetry.hw_slowdown_busy",
        telemetry(0, BUSY, {"clock_reasons.hw_slowdown": 0.25}),
        (0,),
    ),
    Case(
        "HW slowdown while idle",
        "gpu_telemetry.hw_slowdown_busy",
        telemetry(0, {"clock_reasons.hw_slowdown": 0.25}),
    ),
    Case("both GPUs idle", "gpu_telemetry.idle_not_judged", {}, (0, 1)),
    Case(
        "both GPUs busy",
        "gpu_telemetry.idle_not_judged",
        merge(telemetry(0, BUSY), telemetry(1, BUSY)),
    ),
    Case(
        "90 °C, NVML's slowdown point 89",
        "gpu_telemetry.temp_at_slowdown",
        telemetry(1, {"temp_c": stats(90.0)}),
        (1,),
    ),
    Case("86 °C", "gpu_telemetry.temp_at_slowdown", telemetry(1, {"temp_c": stats(86.0)})),
    Case(
        "HBM at its 95 °C maximum",
        "gpu_telemetry.mem_temp_at_max",
        telemetry(0, {"mem_temp_c": stats(95.0)}),
        (0,),
    ),
    Case(
        "HBM at 80 °C", "gpu_telemetry.mem_temp_at_max", telemetry(0, {"mem_temp_c": stats(80.0)})
    ),
    Case(
        "0 W while 95 % busy",
        "gpu_telemetry.power_zero_busy",
        telemetry(1, BUSY, {"power_w": stats(0.0)}),
        (1,),
    ),
    Case(
        "400 W while busy",
        "gpu_telemetry.power_zero_busy",
        telemetry(1, BUSY, {"power_w": stats(400.0)}),
    ),
    Case(
        "900 W against a 700 W limit",
        "gpu_telemetry.power_over_limit",
        telemetry(0, {"power_w": stats(900.0)}),
        (0,),
    ),
    Case(
        "800 W: inside the 20 % allowance",
        "gpu_telemetry.power_over_limit",
        telemetry(0, {"power_w": stats(800.0)}),
    ),
    Case(
        "200 W while busy, TDP 700",
        "gpu_telemetry.power_low_busy",
        telemetry(0, BUSY, {"power_w": stats(200.0)}),
        (0,),
    ),
    Case(
        "420 W while busy (memory-bound work)",
        "gpu_telemetry.power_low_busy",
        telemetry(0, BUSY, {"power_w": stats(420.0)}),
    ),
    Case(
        "two uncorrected ECC errors since load",
        "memory_errors.ecc_volatile_uncorrected",
        {"memory_errors@0": {"ecc_volatile_uncorrected": 2}},
        (0,),
    ),
    Case(
        "corrected ECC errors only",
        "memory_errors.ecc_volatile_uncorrected",
        {"memory_errors@0": {"ecc_volatile_corrected": 40}},
    ),
    Case(
        "63 pages retired",
        "memory_errors.retired_pages_limit",
        {"memory_errors@1": {"retired_sbe": 60, "retired_dbe": 3}},
        (1,),
    ),
    Case(
        "11 pages retired",
        "memory_errors.retired_pages_limit",
        {"memory_errors@1": {"retired_sbe": 10, "retired_dbe": 1}},
    ),
    Case(
        "two banks with no spare row",
        "memory_errors.remap_banks_exhausted",
        {"memory_errors@0": {"remap_histogram.none": 2, "remap_histogram.max": 3070}},
        (0,),
    ),
    Case(
        "rows remapped, spares left",
        "memory_errors.remap_banks_exhausted",
        {"memory_errors@0": {"remap_histogram.partial": 3, "remap_histogram.max": 3069}},
    ),
    Case(
        "12 NVLinks reported of 18",
        "nvlink.links_below_profile",
        {"nvlink@1": {"links_reported": 12}},
        (1,),
    ),
    Case(
        "18 reported, one inactive (the check's finding)",
        "nvlink.links_below_profile",
        {"nvlink@1": {"inactive_links": [3], "links_active": 17}},
    ),
    Case(
        "150 CRC errors/s",
        "nvlink.crc_rate",
        {"nvlink@0": {"errors_per_s": {"crc_data": 150.0, "crc_flit": 0.0}}},
        (0,),
    ),
    Case(
        "15 CRC errors/s, as healthy H200s under load",
        "nvlink.crc_rate",
        {"nvlink@0": {"errors_per_s": {"crc_data": 15.0, "crc_flit": 0.0}}},
    ),
    # ------------------------------------------------------------ rules/kernel-log.yaml
    Case(
        "40 corrected AER errors/min on Gen5",
        "pcie_aer.corrected_rate",
        {"pcie_aer@0": {"events.corrected": 120, "corrected_per_min": 40.0}},
        (0,),
    ),
    Case(
        "25/min, inside Gen5's budget",
        "pcie_aer.corrected_rate",
        {"pcie_aer@0": {"events.corrected": 75, "corrected_per_min": 25.0}},
    ),
    # ------------------------------------------------------------ rules/tensorrt.yaml
    Case(
        "a fallback, SM utilisation 45 % on a busy GPU",
        "tensorrt.fallback_low_sm_util",
        {},
        (0,),
        base="seed",
    ),
    Case(
        "a fallback, SM utilisation 85 %",
        "tensorrt.fallback_low_sm_util",
        telemetry(0, {"sm_util_pct": stats(85.0)}),
        base="seed",
    ),
    Case("built on an A100, fallen back", "tensorrt.rebuild_on_this_gpu", {}, (0,), base="seed"),
    Case(
        "built on this GPU model, fallen back",
        "tensorrt.rebuild_on_this_gpu",
        {"tensorrt@0": {"engine_mismatch": False}},
        base="seed",
    ),
    # ------------------------------------------------------------ rules/topology.yaml
    Case(
        "the pair over SYS",
        "topology.nvlink_missing",
        node("topology", pairs__0__on_nvlink=False, pairs__0__kind="SYS", pairs__0__nvlink=0),
        (None,),
    ),
    Case("the pair on NV18", "topology.nvlink_missing", {}),
    Case(
        "the pair on NV12",
        "topology.nvlink_degraded",
        node("topology", pairs__0__nvlink=12, pairs__0__kind="NV12"),
        (None,),
    ),
    Case("the pair on NV18", "topology.nvlink_degraded", {}),
    Case(
        "GPU 1's NIC across the CPU interconnect",
        "topology.nic_not_paired",
        node("topology", per_gpu__1__nearest_nic_kind="SYS"),
        (1,),
        base="ib-paired",
    ),
    Case("each GPU's NIC behind its switch", "topology.nic_not_paired", {}, base="ib-paired"),
    Case(
        "no affinity printed for GPU 0",
        "topology.affinity_missing",
        node("topology", per_gpu__0__affinity_present=False, per_gpu__0__cpu_affinity="N/A"),
        (0,),
    ),
    Case("affinity printed", "topology.affinity_missing", {}),
    Case(
        "GPU 1's affinity disagrees with sysfs",
        "topology.affinity_inconsistent",
        node(
            "topology",
            per_gpu__1__affinity_consistent=False,
            per_gpu__1__affinity_note="CPU affinity 0-31, sysfs local_cpulist 32-63",
        ),
        (1,),
    ),
    Case("affinity consistent", "topology.affinity_inconsistent", {}),
    Case("2 of the board's 8 GPUs", "topology.partial_board", {}, (None,)),
    Case("8 of 8", "topology.partial_board", node("topology", summary__gpu_count=8)),
    Case(
        "16 GPUs on an 8-GPU board",
        "topology.gpus_exceed_board",
        node("topology", summary__gpu_count=16),
        (None,),
    ),
    Case("2 of 8", "topology.gpus_exceed_board", {}),
    # ------------------------------------------------------------ rules/bandwidth.yaml
    Case(
        "host→device at 20 GB/s on Gen5 x16",
        "bandwidth.h2d_low",
        {"bandwidth@1": {"h2d_gbs": 20.0}},
        (1,),
        base="bw-nvlink",
    ),
    Case("host→device at 55 GB/s", "bandwidth.h2d_low", {}, base="bw-nvlink"),
    Case(
        "device→host at 20 GB/s on Gen5 x16",
        "bandwidth.d2h_low",
        {"bandwidth@0": {"d2h_gbs": 20.0}},
        (0,),
        base="bw-nvlink",
    ),
    Case("device→host at 55 GB/s", "bandwidth.d2h_low", {}, base="bw-nvlink"),
    Case(
        "HBM copies at 2000 GB/s of 4800",
        "bandwidth.hbm_low",
        {"bandwidth@0": {"hbm_gbs": 2000.0}},
        (0,),
        base="bw-nvlink",
    ),
    Case("HBM copies at 4123 GB/s", "bandwidth.hbm_low", {}, base="bw-nvlink"),
    Case(
        "peer writes at 150 GB/s over 18 NVLinks",
        "bandwidth.p2p_nvlink_low",
        node("bandwidth", pairs__0__gbs=150.0),
        (None,),
        base="bw-nvlink",
    ),
    Case("peer writes at 371 GB/s", "bandwidth.p2p_nvlink_low", {}, base="bw-nvlink"),
    Case(
        "peer copies at 20 GB/s over Gen5 x16",
        "bandwidth.p2p_pcie_low",
        node("bandwidth", pairs__0__gbs=20.0),
        (None,),
        base="bw-pcie",
    ),
    Case(
        "peer copies at 45 GB/s over Gen5 x16",
        "bandwidth.p2p_pcie_low",
        node("bandwidth", pairs__0__gbs=45.0),
        base="bw-pcie",
    ),
    Case(
        "two GPUs at half their figure together",
        "bandwidth.shared_port_capped",
        {},
        (None,),
        base="bw-shared",
    ),
    Case(
        "two GPUs at their figure together",
        "bandwidth.shared_port_capped",
        node("bandwidth", shared_ports__0__together_gbs=105.0, shared_ports__0__ratio=0.95),
        base="bw-shared",
    ),
    Case(
        "the shared Gen5 x16 uplink carries 30 GB/s",
        "bandwidth.shared_port_low",
        node("bandwidth", shared_ports__0__together_gbs=30.0, shared_ports__0__ratio=0.27),
        (None,),
        base="bw-shared",
    ),
    Case("the shared uplink carries 55 GB/s", "bandwidth.shared_port_low", {}, base="bw-shared"),
    # ------------------------------------------------------------ rules/infiniband.yaml
    Case(
        "one port at HDR of NDR",
        "infiniband.rate_below_profile",
        node("infiniband", ports__3__rate_gbps=200.0, ports__3__rate="200 Gb/sec (4X HDR)"),
        (None,),
        base="ib",
    ),
    Case("eight ports at NDR", "infiniband.rate_below_profile", {}, base="ib"),
    Case(
        "a profile without an IB rate",
        "infiniband.rate_not_judged",
        {},
        (None,),
        profile=H200_NO_IB_RATE | {"name": "h200-no-ib-rate"},
        base="ib",
    ),
    Case("the profile's 400 Gb/s", "infiniband.rate_not_judged", {}, base="ib"),
    Case(
        "25 symbol errors/s",
        "infiniband.symbol_error_rate",
        node("infiniband", ports__2__symbol_error_per_s=25.0),
        (None,),
        base="ib",
    ),
    Case(
        "4 symbol errors/s",
        "infiniband.symbol_error_rate",
        node("infiniband", ports__2__symbol_error_per_s=4.0),
        base="ib",
    ),
    Case(
        "30 receive errors/s",
        "infiniband.rcv_error_rate",
        node("infiniband", ports__5__port_rcv_errors_per_s=30.0),
        (None,),
        base="ib",
    ),
    Case(
        "2 receive errors/s",
        "infiniband.rcv_error_rate",
        node("infiniband", ports__5__port_rcv_errors_per_s=2.0),
        base="ib",
    ),
    Case(
        "500 transmit discards/s",
        "infiniband.xmit_discard_rate",
        node("infiniband", ports__6__port_xmit_discards_per_s=500.0),
        (None,),
        base="ib",
    ),
    Case(
        "50 transmit discards/s",
        "infiniband.xmit_discard_rate",
        node("infiniband", ports__6__port_xmit_discards_per_s=50.0),
        base="ib",
    ),
    Case(
        "1 % of 2M packets retransmitted",
        "infiniband.retransmit_rate",
        node(
            "infiniband",
            ports__1__xmit_packets=2_000_000,
            ports__1__retransmits=20_000,
            ports__1__retransmit_pct=1.0,
        ),
        (None,),
        base="ib",
    ),
    Case(
        "0.2 % of 2M packets retransmitted",
        "infiniband.retransmit_rate",
        node(
            "infiniband",
            ports__1__xmit_packets=2_000_000,
            ports__1__retransmits=4_000,
            ports__1__retransmit_pct=0.2,
        ),
        base="ib",
    ),
    Case(
        "5 % of a nearly idle port's 5,000 packets",
        "infiniband.retransmit_rate",
        node(
            "infiniband",
            ports__1__xmit_packets=5_000,
            ports__1__retransmits=250,
            ports__1__retransmit_pct=5.0,
        ),
        base="ib",
    ),
    Case(
        "200 CQ overflows/s",
        "infiniband.cq_overflow_rate",
        node("infiniband", hcas__0__cq_overflow_per_s=200.0),
        (None,),
        base="ib",
    ),
    Case(
        "30 CQ overflows/s",
        "infiniband.cq_overflow_rate",
        node("infiniband", hcas__0__cq_overflow_per_s=30.0),
        base="ib",
    ),
    Case(
        "GPU 1's NIC down",
        "infiniband.gpu_nic_down",
        node("infiniband", ports__1__active=False, ports__1__state="DOWN"),
        (1,),
        base="ib-paired",
    ),
    Case("each GPU's NIC active", "infiniband.gpu_nic_down", {}, base="ib-paired"),
    Case(
        "GPU 0's NIC at HDR",
        "infiniband.gpu_nic_slow",
        node("infiniband", ports__0__rate_gbps=200.0, ports__0__rate="200 Gb/sec (4X HDR)"),
        (0,),
        base="ib-paired",
    ),
    Case("each GPU's NIC at NDR", "infiniband.gpu_nic_slow", {}, base="ib-paired"),
]

REGISTRY = [*QUICK_CASES, *CASES]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], list[CheckResult]]:
    """A base's check results, replayed once."""
    done: dict[str, list[CheckResult]] = {}

    def of(base: str) -> list[CheckResult]:
        if base not in done:
            done[base] = replay(BASES[base](tmp_path_factory.mktemp(base))).checks
        return done[base]

    return of


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.rule}: {c.name}")
def test_rule_fires_exactly_where_it_should(
    case: Case, results: Callable[[str], list[CheckResult]]
) -> None:
    assert_fires_exactly(case, results(case.base))


def shipped_rules() -> dict[str, str]:
    """Every rule id of the built-in rule files, with its file's name."""
    return {rule.id: Path(rule.file).name for rule in RULESET.rules}


# Rule files whose newer rules have their firing and quiet cases in their own suite (a real
# bundle edited there, as the registry's are): such a rule counts when a test there names it.
OWN_SUITES = {
    "acceptance.yaml": "accept",
    "infiniband.yaml": "infiniband",
    "bandwidth.yaml": "bandwidth",
}


def named_by_own_suite(rule: str, file: str) -> bool:
    suite = OWN_SUITES.get(file)
    if suite is None:
        return False
    return any(rule in path.read_text() for path in (TESTS / suite).glob("test_*.py"))


def test_every_shipped_rule_has_a_case_that_fires_and_one_that_keeps_it_quiet() -> None:
    firing = {c.rule for c in REGISTRY if c.fires_on}
    quiet = {c.rule for c in REGISTRY if not c.fires_on}
    rules = shipped_rules()
    assert len(rules) >= 50 and {Path(f).stem for f in rules.values()} >= {
        "quick-check",
        "gpu-health",
        "kernel-log",
        "tensorrt",
        "topology",
        "bandwidth",
        "infiniband",
    }
    missing = {
        rule: [kind for kind, cases in (("firing", firing), ("quiet", quiet)) if rule not in cases]
        for rule, file in rules.items()
        if not named_by_own_suite(rule, file)
    }
    assert {rule: kinds for rule, kinds in missing.items() if kinds} == {}
    assert {c.rule for c in REGISTRY} <= set(rules), "a case names a rule no file ships"
