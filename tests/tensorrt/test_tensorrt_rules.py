"""rules/tensorrt.yaml over the tensorrt check's facts (from bundles) and gpu_telemetry facts."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
from sitscheck.engine.cel import CelEnvironment
from sitscheck.engine.evaluate import evaluate_rules
from sitscheck.engine.loader import builtin_rules_dir, load_rules, rule_files
from sitscheck.models import CheckResult, Status, Verdict
from sitscheck.report.assemble import mark_explanations
from sitscheck.sources.replay import ReplaySources
from trt_helpers import H200_BUILD, SEED_EXAMPLE, collect, make_bundle

LOW_UTIL = "tensorrt.fallback_low_sm_util"
REBUILD = "tensorrt.rebuild_on_this_gpu"


@pytest.fixture(scope="module")
def env() -> CelEnvironment:
    return CelEnvironment()


def tensorrt_result(tmp_path: Path, logs: dict[str, str | bytes]) -> CheckResult:
    out = collect(ReplaySources(make_bundle(tmp_path, logs)))
    return CheckResult(name="tensorrt", status=Status.OK, facts=out.facts)


def telemetry(*gpus: dict[str, Any], status: Status = Status.OK) -> CheckResult:
    if status == Status.SKIPPED:
        return CheckResult(name="gpu_telemetry", status=status, skip_reason="no NVML")
    return CheckResult(name="gpu_telemetry", status=status, facts={"gpus": list(gpus)})


def gpu(index: int, util: float, sm: float | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": index, "util_gpu_pct": {"mean": util}}
    if sm is not None:
        entry["sm_util_pct"] = {"mean": sm}
    return entry


def verdicts(
    env: CelEnvironment, results: list[CheckResult], extra: list[Path] | None = None
) -> dict[str, list[Verdict]]:
    ruleset = load_rules(rule_files(extra or []), env)
    out: dict[str, list[Verdict]] = {}
    for verdict in mark_explanations(evaluate_rules(ruleset, results, None, env)):
        out.setdefault(verdict.rule, []).append(verdict)
    return out


def summary(found: list[Verdict]) -> list[tuple[Status, int | None]]:
    return [(v.status, v.device.index if v.device else None) for v in found]


def test_the_rule_file_ships_with_the_package() -> None:
    assert (builtin_rules_dir() / "tensorrt.yaml").is_file()


def test_seed_example_on_a_busy_gpu_with_low_sm_utilisation(
    tmp_path: Path, env: CelEnvironment
) -> None:
    results = [
        tensorrt_result(tmp_path, {"seed-example.log": SEED_EXAMPLE}),
        telemetry(gpu(0, 95.0, 45.0), gpu(1, 95.0, 45.0)),
    ]
    found = verdicts(env, results)
    # GPU 1 has no fallback (the log names GPU 0): it is not judged by the rule.
    assert summary(found[LOW_UTIL]) == [(Status.WARNING, 0)]
    low = found[LOW_UTIL][0]
    assert low.message == (
        "GPU 0: TensorRT fell back on 1 layer(s) and SM utilisation averaged 45 % while the GPU "
        "was busy (95 % utilization; SM utilisation below 60 %): compute is not fully released"
    )
    assert low.source is not None and "§2.5" in low.source
    assert low.layer.value == "runtime"
    assert summary(found[REBUILD]) == [(Status.CRITICAL, 0)]
    assert found[REBUILD][0].message.startswith(
        "GPU 0 (NVIDIA H200): the TensorRT engine was built"
    )
    # The engine built for another GPU explains the low utilisation on the same GPU.
    assert low.explained_by == [REBUILD]


@pytest.mark.parametrize(
    ("util", "sm", "expected"),
    [
        (95.0, 59.9, Status.WARNING),
        (95.0, 60.0, Status.OK),
        (95.0, 75.0, Status.OK),
        (80.0, 30.0, Status.WARNING),  # busy from gpu-health.yaml's busy_util_pct (80)
        (79.9, 30.0, Status.OK),  # idle: nothing runs, nothing to judge
        (10.0, 5.0, Status.OK),
    ],
)
def test_threshold_and_busy(
    tmp_path: Path, env: CelEnvironment, util: float, sm: float, expected: Status
) -> None:
    results = [
        tensorrt_result(tmp_path, {"seed-example.log": SEED_EXAMPLE}),
        telemetry(gpu(0, util, sm), gpu(1, util, sm)),
    ]
    (verdict,) = verdicts(env, results)[LOW_UTIL]
    assert verdict.status == expected
    if expected == Status.WARNING:
        assert verdict.device is not None and verdict.device.index == 0


def test_the_threshold_is_a_param_a_site_file_overrides(
    tmp_path: Path, env: CelEnvironment
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "site.yaml").write_text(
        textwrap.dedent("params:\n  trt_fallback_sm_util_pct: 40\n"), encoding="utf-8"
    )
    results = [
        tensorrt_result(tmp_path, {"seed-example.log": SEED_EXAMPLE}),
        telemetry(gpu(0, 95.0, 45.0), gpu(1, 95.0, 45.0)),
    ]
    assert summary(verdicts(env, results, [site])[LOW_UTIL]) == [(Status.OK, None)]


def test_missing_sm_utilisation_on_a_gpu_with_a_fallback_is_unknown(
    tmp_path: Path, env: CelEnvironment
) -> None:
    results = [
        tensorrt_result(tmp_path, {"seed-example.log": SEED_EXAMPLE}),
        telemetry(gpu(0, 95.0, None), gpu(1, 95.0, None)),
    ]
    (verdict,) = verdicts(env, results)[LOW_UTIL]
    assert verdict.status == Status.UNKNOWN
    assert verdict.reason is not None and "sm_util_pct" in verdict.reason


def test_skipped_without_telemetry(tmp_path: Path, env: CelEnvironment) -> None:
    results = [
        tensorrt_result(tmp_path, {"seed-example.log": SEED_EXAMPLE}),
        telemetry(status=Status.SKIPPED),
    ]
    found = verdicts(env, results)
    assert summary(found[LOW_UTIL]) == [(Status.SKIPPED, None)]
    assert found[LOW_UTIL][0].reason == "check gpu_telemetry skipped: no NVML"
    assert summary(found[REBUILD]) == [(Status.CRITICAL, 0)]  # needs tensorrt only


def test_precision_fallbacks_count_too(tmp_path: Path, env: CelEnvironment) -> None:
    text = "[W] [TRT] Layer attn_softmax: FP16 kernel unavailable, running in FP32.\n"
    results = [
        tensorrt_result(tmp_path, {"fp32.log": text}),
        telemetry(gpu(0, 95.0, 45.0), gpu(1, 95.0, 70.0)),
    ]
    found = verdicts(env, results)
    assert summary(found[LOW_UTIL]) == [(Status.WARNING, 0)]
    # The log names no GPU it was built on: engine_mismatch is null, the rebuild rule is quiet.
    assert summary(found[REBUILD]) == [(Status.OK, None)]


def test_a_matching_engine_needs_no_rebuild(tmp_path: Path, env: CelEnvironment) -> None:
    text = H200_BUILD.replace(
        "[08/29/2024-10:12:09] [I] Engine built",
        "[08/29/2024-10:12:05] [W] [TRT] Skipping tactic 3 due to insufficient memory.\n"
        "[08/29/2024-10:12:09] [I] Engine built",
    )
    results = [
        tensorrt_result(tmp_path, {"h200.log": text}),
        telemetry(gpu(0, 95.0, 90.0), gpu(1, 95.0, 90.0)),
    ]
    found = verdicts(env, results)
    assert summary(found[REBUILD]) == [(Status.OK, None)]
    assert summary(found[LOW_UTIL]) == [(Status.OK, None)]


def test_a_mismatch_without_fallbacks_is_the_check_s_finding_not_this_rule(
    tmp_path: Path, env: CelEnvironment
) -> None:
    text = H200_BUILD.replace("NVIDIA H200", "NVIDIA A100-SXM4-80GB").replace("9.0", "8.0")
    results = [tensorrt_result(tmp_path, {"a100.log": text}), telemetry(gpu(0, 95.0, 10.0))]
    assert results[0].facts["gpus"][0]["engine_mismatch"] is True
    assert summary(verdicts(env, results)[REBUILD]) == [(Status.OK, None)]
