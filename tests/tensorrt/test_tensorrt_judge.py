"""The tensorrt judge, pure: GPU matching, what a log names, findings, per-GPU facts."""

from __future__ import annotations

from typing import Any

import pytest
from sitscheck.checks.tensorrt.judge import (
    LogMarks,
    ScannedLog,
    applies_to,
    engine_mismatch,
    gpu_facts,
    judge_logs,
    judge_probe,
)
from sitscheck.checks.tensorrt.parse import TrtLog, scan_trt_log
from sitscheck.gpu.identity import GpuRef
from sitscheck.models import Severity

H200 = [GpuRef(0, "0000:19:00.0", "NVIDIA H200"), GpuRef(1, "0000:2a:00.0", "NVIDIA H200")]


def log(gpu: str | None = None, sm: str | None = None, lines: tuple[str, ...] = ()) -> TrtLog:
    """A scanned log whose build target is (gpu, sm)."""
    head = []
    if gpu is not None:
        head.append(f"[I] Selected Device: {gpu}")
    if sm is not None:
        head.append(f"[I] Compute Capability: {sm[3:-1]}.{sm[-1]}")
    result = scan_trt_log([*head, *lines], "x.log")
    assert (result.gpu, result.sm) == (gpu, sm)
    return result


def scanned(result: TrtLog, indices: tuple[int, ...] = (), passed: bool = False) -> ScannedLog:
    return ScannedLog(result, result.file, indices, passed)


# --------------------------------------------------------------------------- matching


@pytest.mark.parametrize(
    ("built_gpu", "built_sm", "node", "expected"),
    [
        ("A100-PCIE-40GB", None, "NVIDIA H200", True),
        ("A100-PCIE-40GB", "sm_86", "NVIDIA H200", True),
        (None, "sm_86", "NVIDIA H200", True),
        (None, "sm_90", "NVIDIA H200", False),
        ("NVIDIA H200", "sm_90", "NVIDIA H200", False),
        ("NVIDIA H100 80GB HBM3", "sm_90", "NVIDIA H200", True),  # same sm, another model
        ("NVIDIA A100-SXM4-80GB", None, "NVIDIA A100-PCIE-40GB", False),  # form factor, memory
        ("NVIDIA A800-SXM4-80GB", None, "NVIDIA A100-SXM4-80GB", True),
        ("NVIDIA H200", "sm_86", "NVIDIA H200", True),  # the log's own sm disagrees with it
        (None, None, "NVIDIA H200", None),
        ("A100-PCIE-40GB", None, None, None),
        ("A100-PCIE-40GB", None, "Some Future GPU", None),
        ("Some Future GPU", None, "NVIDIA H200", None),
        ("Some Future GPU", "sm_90", "NVIDIA H200", False),
    ],
)
def test_engine_mismatch(
    built_gpu: str | None, built_sm: str | None, node: str | None, expected: bool | None
) -> None:
    assert engine_mismatch(log(built_gpu, built_sm), GpuRef(0, None, node)) is expected


MEMORY = "[I] [TRT] [MemUsageChange] Init CUDA: CPU +2, GPU +0, now: CPU 24, GPU 537 (MiB)"
RUNNING = "&&&& RUNNING TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=m.onnx --device=2"
PASSED = "&&&& PASSED TensorRT.trtexec [TensorRT v8601] # x"


@pytest.mark.parametrize(
    ("lines", "indices", "passed"),
    [
        (["[INFO] Engine built for GPU 0 (A100-PCIE-40GB), maxWorkspaceSize=1"], [0], False),
        ([MEMORY], [], False),
        (["[MemUsageStats] Peak memory usage: CPU 1 MiB, GPU 262 MiB", "GPU 4 MiB"], [], False),
        (["[08/29/2024-10:12:01] [I] Device: 1", "[I] DLACore: "], [1], False),
        ([RUNNING], [2], False),
        (["[I] Selected Device ID: 3", PASSED], [3], True),
        (["building on GPU 1", "running on GPU 1", "[I] using GPU 0"], [1, 0], False),
        (["&&&& FAILED TensorRT.trtexec"], [], False),
        (["[I] Weights: using GPU 12 MiB", "[I] on GPU 3 (MiB)"], [], False),
    ],
)
def test_log_marks(lines: list[str], indices: list[int], passed: bool) -> None:
    marks = LogMarks()
    for line in lines:
        marks.observe(line)
    assert (marks.gpu_indices, marks.passed) == (indices, passed)


def test_applies_to_named_gpus_else_every_gpu() -> None:
    result = log()
    assert applies_to(scanned(result, (1,)), H200) == [H200[1]]
    assert applies_to(scanned(result), H200) == H200
    assert applies_to(scanned(result, (7,)), H200) == H200  # GPU 7 is not on this node
    assert applies_to(scanned(result, (0, 1)), H200) == H200


# --------------------------------------------------------------------------- findings


def kinds(findings: list[Any]) -> list[tuple[str, Severity, int | None]]:
    return [(f.code, f.severity, f.device.index if f.device else None) for f in findings]


def test_inconsistent_log_is_a_finding_even_on_a_matching_node() -> None:
    result = log("A100-PCIE-40GB", "sm_86")
    a100 = [GpuRef(0, None, "NVIDIA A100-PCIE-40GB")]
    judged = judge_logs([scanned(result)], a100)
    # An A100 node: the model matches, but the log says SM_86 and an A100 is sm_80.
    assert kinds(judged.findings) == [
        ("tensorrt.built_on_inconsistent", Severity.WARNING, 0),
        ("tensorrt.engine_mismatch", Severity.CRITICAL, 0),
    ]
    consistent = judge_logs([scanned(log("A100-PCIE-40GB", "sm_80"))], a100)
    assert consistent.findings == []
    assert consistent.not_judged == []


def test_unknown_node_models_are_not_judged_with_the_gpus_named() -> None:
    gpus = [GpuRef(0, None, None), GpuRef(1, None, "NVIDIA H200")]
    judged = judge_logs([scanned(log("NVIDIA H200"))], gpus)
    assert judged.findings == []
    assert judged.not_judged == [
        "x.log: engine built on NVIDIA H200 (sm_90): not compared with GPU 0: the GPU model "
        "(or the log's) is not known"
    ]
    assert judge_logs([scanned(log("NVIDIA H200"))], []).not_judged == [
        "x.log: engine built on NVIDIA H200 (sm_90): this node's GPUs are not known"
    ]


def test_mismatch_names_only_the_gpus_that_differ() -> None:
    gpus = [GpuRef(0, "a", "NVIDIA H200"), GpuRef(1, "b", "NVIDIA A100-SXM4-80GB")]
    judged = judge_logs([scanned(log("NVIDIA A100-PCIE-40GB"))], gpus)
    assert kinds(judged.findings) == [("tensorrt.engine_mismatch", Severity.CRITICAL, 0)]
    assert "GPU 0 (NVIDIA H200, sm_90)" in judged.findings[0].message
    assert "GPU 1" not in judged.findings[0].message


def test_fallback_message_names_layers_and_counts_the_rest() -> None:
    dla = (
        f"[W] [TRT] Layer 'conv{n}' (CONVOLUTION): Unsupported on DLA. Switching this layer's "
        "device type to GPU."
        for n in range(9)
    )
    skip = "[W] [TRT] Skipping tactic 3 due to insufficient memory on requested size of 9385."
    lines = (*dla, skip)
    judged = judge_logs([scanned(log(lines=lines))], H200)
    (finding,) = judged.findings
    assert finding.code == "tensorrt.fallback" and finding.severity == Severity.WARNING
    assert finding.message.startswith(
        "x.log: 10 fallbacks to a slower path (layers conv0, conv1, conv2, conv3, conv4, conv5 "
        "and 3 more; 1 with no layer named): Layer 'conv0' (CONVOLUTION)"
    )
    assert finding.evidence[0].excerpt is not None
    assert len(finding.evidence[0].excerpt.splitlines()) == 5


def test_fallback_counts_use_the_totals_past_the_cap() -> None:
    lines = [f"[W] Skipping tactic {n} due to insufficient memory." for n in range(5)]
    capped = scan_trt_log(lines, "x.log", max_items=2)
    judged = judge_logs([scanned(capped)], H200)
    assert judged.findings[0].message.startswith("x.log: 5 fallbacks")
    assert [g["fallbacks"] for g in gpu_facts([scanned(capped)], H200)] == [5, 5]


@pytest.mark.parametrize(
    ("lines", "passed", "expected"),
    [
        (("[E] Build serialized network failed.",), False, "tensorrt.build_failed"),
        (("[E] some error",), False, "tensorrt.build_failed"),
        (("[E] some error",), True, "tensorrt.build_errors"),
        (("[E] some error", "[I] Engine built in 3.5 sec."), False, "tensorrt.build_errors"),
        (("[E] Build serialized network failed.",), True, "tensorrt.build_failed"),
        (("[E] 10: Could not find any implementation for node x.",), True, "tensorrt.build_failed"),
    ],
)
def test_failed_or_erroring_builds(lines: tuple[str, ...], passed: bool, expected: str) -> None:
    judged = judge_logs([scanned(log(lines=lines), passed=passed)], H200)
    assert [f.code for f in judged.findings] == [expected]
    severity = Severity.CRITICAL if expected == "tensorrt.build_failed" else Severity.WARNING
    assert judged.findings[0].severity == severity


# --------------------------------------------------------------------------- per-GPU facts


def test_gpu_facts_join_logs_and_probe() -> None:
    seed = scanned(
        log(
            "A100-PCIE-40GB",
            lines=("[W] Layer conv3x3_2: fallback to cuBLASLt due to unsupported dilation=2.",),
        ),
        (0,),
    )
    match = scanned(log("NVIDIA H200", "sm_90"))
    probe = [{"index": 0, "status": "built"}, {"index": 1, "status": "failed"}]
    facts = gpu_facts([seed, match], H200, probe)
    assert facts == [
        {
            "index": 0,
            "pci_bus_id": "0000:19:00.0",
            "name": "NVIDIA H200",
            "fallbacks": 1,
            "precision_fallbacks": 0,
            "engine_mismatch": True,
            "logs": ["x.log", "x.log"],
            "probe_built": True,
        },
        {
            "index": 1,
            "pci_bus_id": "0000:2a:00.0",
            "name": "NVIDIA H200",
            "fallbacks": 0,
            "precision_fallbacks": 0,
            "engine_mismatch": False,
            "logs": ["x.log"],
            "probe_built": False,
        },
    ]


def test_probe_findings() -> None:
    entries = [
        {"index": 0, "pci_bus_id": "a", "name": "NVIDIA H200", "status": "built", "reason": None},
        {
            "index": 1,
            "pci_bus_id": "b",
            "name": "NVIDIA H200",
            "status": "failed",
            "reason": "10: Could not find any implementation",
            "log": {"errors": ["10: Could not find any implementation", "&&&& FAILED x"]},
        },
        {"index": 2, "status": "timed_out", "reason": "no engine within 5.0s (killed)"},
    ]
    judged = judge_probe(entries, "probe")
    assert kinds(judged.findings) == [("tensorrt.probe_failed", Severity.CRITICAL, 1)]
    assert "GPU 1: 10: Could not find any implementation" in judged.findings[0].message
    assert judged.findings[0].evidence[0].excerpt == (
        "10: Could not find any implementation\n&&&& FAILED x"
    )
    assert judged.not_judged == ["TensorRT probe on GPU 2: no engine within 5.0s (killed)"]
