"""Stragglers (rules over the per-GPU facts): a GPU below the node's upper median by 10 % is a
warning, by 25 % critical, for compute and soak TFLOP/s, soak iteration p99, memory-test
throughput, HBM and host→device bandwidth. An 8×H200 node composed from the real H200's
figures (accept_bundles.eight_gpus), replayed through the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from accept_bundles import check, eight_gpus, fired, one_gpu, replay

FIGURES = ("compute_tflops", "soak_tflops", "soak_iteration_p99", "memtest_throughput",
           "hbm_bandwidth", "h2d_bandwidth")  # fmt: skip


# the straggler rules these tests fire and keep quiet, by name (the rule registry of
# tests/rules/test_rules_every_rule.py finds them here)
RULES = (
    "straggler.compute_tflops", "straggler.compute_tflops_critical",
    "straggler.soak_tflops", "straggler.soak_tflops_critical",
    "straggler.soak_iteration_p99", "straggler.soak_iteration_p99_critical",
    "straggler.memtest_throughput", "straggler.memtest_throughput_critical",
    "straggler.hbm_bandwidth", "straggler.hbm_bandwidth_critical",
    "straggler.h2d_bandwidth", "straggler.h2d_bandwidth_critical",
)  # fmt: skip


def test_the_rules_named_here_are_every_straggler_rule_shipped() -> None:
    from sitscheck.engine.cel import CelEnvironment
    from sitscheck.engine.loader import load_rules, rule_files, shipped_rules_dirs

    shipped = shipped_rules_dirs()
    rules = load_rules(rule_files([], shipped), CelEnvironment(), shipped=shipped).rules
    ids = {r.id for r in rules}
    assert {i for i in ids if i.startswith("straggler.")} == set(RULES)
    assert set(RULES) == {f"straggler.{f}{s}" for f in FIGURES for s in ("", "_critical")}


def _stragglers(report: dict[str, Any]) -> list[tuple[str, str, int | None]]:
    return [v for v in fired(report) if v[0].startswith("straggler.")]


def _message(report: dict[str, Any], rule: str) -> str:
    [message] = [v["message"] for v in report["verdicts"] if v["rule"] == rule and v["device"]]
    return str(message)


def _expected(*gpus: tuple[int, str]) -> list[tuple[str, str, int]]:
    return sorted(
        (f"straggler.{figure}" + ("_critical" if level == "critical" else ""), level, gpu)
        for figure in FIGURES
        for gpu, level in gpus
    )


@pytest.fixture(scope="module")
def slow_node(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """GPU 5 15 % slow, GPU 6 30 % slow, in every figure."""
    return replay(eight_gpus(tmp_path_factory.mktemp("slow"), {5: 0.85, 6: 0.70}))[1]


def test_15_percent_slow_is_a_warning_30_percent_critical(slow_node: dict[str, Any]) -> None:
    """Each GPU gets one verdict per figure: the warning stays quiet where the critical fires."""
    assert _stragglers(slow_node) == _expected((5, "warning"), (6, "critical"))


def test_the_message_names_the_gpu_and_the_nodes_figures(slow_node: dict[str, Any]) -> None:
    message = _message(slow_node, "straggler.compute_tflops")
    assert message.startswith("GPU 5: 584 TFLOP/s in the compute screen, more than 10 % below")
    figures = "GPU0 687, GPU1 687, GPU2 687, GPU3 687, GPU4 687, GPU5 584, GPU6 481, GPU7 687"
    assert f"(TFLOP/s by GPU: {figures})" in message
    message = _message(slow_node, "straggler.soak_iteration_p99_critical")
    assert message.startswith("GPU 6: soak iteration p99 2419 µs, a rate more than 25 % below")


def test_the_composed_node_has_one_facts_record_per_gpu(slow_node: dict[str, Any]) -> None:
    for name in ("memtest", "compute", "soak"):
        gpus = check(slow_node, name)["facts"]["gpus"]
        assert [g["gpu"] for g in gpus] == list(range(8))
        assert len({g["pci_bus_id"] for g in gpus}) == 8
    assert [g["matches_node"] for g in check(slow_node, "compute")["facts"]["gpus"]] == [True] * 8


def test_an_even_node_is_quiet(tmp_path: Path) -> None:
    report = replay(eight_gpus(tmp_path, {}))[1]
    assert _stragglers(report) == []


def test_just_inside_the_bands_is_quiet_just_outside_fires(tmp_path: Path) -> None:
    report = replay(eight_gpus(tmp_path / "a", {1: 0.91, 2: 0.76}))[1]
    assert _stragglers(report) == _expected((2, "warning"))
    report = replay(eight_gpus(tmp_path / "b", {1: 0.89, 2: 0.74}))[1]
    assert _stragglers(report) == _expected((1, "warning"), (2, "critical"))


def test_the_upper_median_with_half_the_node_slow(tmp_path: Path) -> None:
    """Four of eight GPUs 15 % slow: the upper median (the 5th smallest figure) is a fast
    GPU's, so the four slow ones are named (a lower median would pass them all)."""
    report = replay(eight_gpus(tmp_path, {4: 0.85, 5: 0.85, 6: 0.85, 7: 0.85}))[1]
    assert _stragglers(report) == _expected(*((g, "warning") for g in (4, 5, 6, 7)))


def test_two_gpus_the_median_is_the_faster_one(tmp_path: Path) -> None:
    report = replay(eight_gpus(tmp_path, {1: 0.85}, gpus=2))[1]
    assert _stragglers(report) == _expected((1, "warning"))


def test_one_gpu_has_no_median(tmp_path: Path) -> None:
    report = replay(one_gpu(tmp_path))[1]
    assert {v["status"] for v in report["verdicts"] if v["rule"].startswith("straggler.")} == {"ok"}
