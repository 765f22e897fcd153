"""The tensorrt check over bundles: the seed's worked example, the corpus, mismatches, failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus_paths import SHARED_CORPUS
from sitscheck.checks.tensorrt.check import TensorrtCheck
from sitscheck.checks.tensorrt.impl import display_name
from sitscheck.config import RunConfig
from sitscheck.contract import Check
from sitscheck.contract.registry import discover
from sitscheck.contract.runner import run_checks
from sitscheck.models import Severity, Status
from sitscheck.sources.replay import ReplaySources
from trt_helpers import (
    FAILED_BUILD,
    H200_BUILD,
    SEED_EXAMPLE,
    SEED_FALLBACK,
    codes,
    collect,
    make_bundle,
)

# facts.md "trt": the keys every annotated log object carries.
FACT_KEYS = {"trt_version", "built_on", "fallbacks", "precision_fallbacks", "errors", "warnings"}


def h200(index: int) -> dict[str, object]:
    return {
        "index": index,
        "pci_bus_id": f"0000:00:0{6 + index}.0",
        "name": "NVIDIA H200",
    }


# --------------------------------------------------------------------------- the seed example


def test_seed_example_on_the_h200_node_gives_both_findings(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {"seed-example.log": SEED_EXAMPLE})
    out = collect(ReplaySources(bundle))
    assert out.error is None
    # The log names "GPU 0": it applies to the node's GPU 0.
    assert codes(out) == [
        ("tensorrt.built_on_inconsistent", "warning", 0),
        ("tensorrt.engine_mismatch", "critical", 0),
        ("tensorrt.fallback", "warning", 0),
    ]
    mismatch, fallback = out.findings[1], out.findings[2]
    assert "A100-PCIE-40GB (sm_80; the log also says sm_86)" in mismatch.message
    assert "GPU 0 (NVIDIA H200, sm_90)" in mismatch.message
    assert mismatch.device is not None and mismatch.device.pci_bus_id == "0000:00:06.0"
    assert "NVIDIA H200" in (mismatch.action or "")
    assert "conv3x3_2" in fallback.message and SEED_FALLBACK in fallback.message
    assert fallback.evidence[0].ref == "tensorrt/seed-example.log"
    assert fallback.evidence[0].excerpt == f"conv3x3_2: {SEED_FALLBACK}"
    assert (
        "SM_86" in out.findings[0].message and "A100-PCIE-40GB (sm_80)" in out.findings[0].message
    )
    assert out.not_judged == []


def test_seed_example_exact_facts(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {"seed-example.log": SEED_EXAMPLE})
    out = collect(ReplaySources(bundle))
    assert out.facts == {
        "logs": [
            {
                "file": "tensorrt/seed-example.log",
                "trt_version": None,
                "built_on": {"gpu": "A100-PCIE-40GB", "sm": "sm_86"},
                "fallbacks": [{"layer": "conv3x3_2", "reason": SEED_FALLBACK}],
                "precision_fallbacks": [],
                "errors": [],
                "warnings": 1,
                "layers": 128,
                "fused": 42,
                "build_time_s": None,
                "peak_memory_mib": None,
                "truncated": False,
            }
        ],
        "gpus": [
            {
                **h200(0),
                "fallbacks": 1,
                "precision_fallbacks": 0,
                "engine_mismatch": True,
                "logs": ["tensorrt/seed-example.log"],
                "probe_built": None,
            },
            {
                **h200(1),
                "fallbacks": 0,
                "precision_fallbacks": 0,
                "engine_mismatch": None,
                "logs": [],
                "probe_built": None,
            },
        ],
        "probe": None,
    }
    metrics = {m.name: m.value for m in out.metrics}
    assert metrics == {
        "sitscheck.trt.logs": 1,
        "sitscheck.trt.fallbacks": 1,
        "sitscheck.trt.precision_fallbacks": 0,
        "sitscheck.trt.errors": 0,
    }
    json.dumps(out.facts)


def test_seed_example_without_a_gpu_index_applies_to_every_gpu(tmp_path: Path) -> None:
    text = SEED_EXAMPLE.replace("Engine built for GPU 0 (", "Engine built for GPU (")
    bundle = make_bundle(tmp_path, {"seed.log": text})
    out = collect(ReplaySources(bundle))
    assert codes(out) == [
        ("tensorrt.built_on_inconsistent", "warning", None),
        ("tensorrt.engine_mismatch", "critical", None),
        ("tensorrt.fallback", "warning", None),
    ]
    assert "GPU 0 (NVIDIA H200, sm_90), GPU 1 (NVIDIA H200, sm_90)" in out.findings[1].message
    assert [(g["fallbacks"], g["engine_mismatch"], g["logs"]) for g in out.facts["gpus"]] == [
        (1, True, ["tensorrt/seed.log"]),
        (1, True, ["tensorrt/seed.log"]),
    ]


def test_a_log_naming_gpu_1_applies_to_gpu_1_only(tmp_path: Path) -> None:
    text = SEED_EXAMPLE.replace("for GPU 0 (A100-PCIE-40GB)", "for GPU 1 (NVIDIA H200)").replace(
        " on SM_86", ""
    )
    bundle = make_bundle(tmp_path, {"gpu1.log": text})
    out = collect(ReplaySources(bundle))
    assert codes(out) == [("tensorrt.fallback", "warning", 1)]
    assert [(g["fallbacks"], g["engine_mismatch"]) for g in out.facts["gpus"]] == [
        (0, None),
        (1, False),
    ]


def test_the_runner_reports_the_seed_example_critical(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {"seed-example.log": SEED_EXAMPLE})
    (result,) = run_checks([TensorrtCheck()], ReplaySources(bundle), RunConfig())
    assert result.status == Status.CRITICAL
    assert result.facts["logs"][0]["built_on"] == {"gpu": "A100-PCIE-40GB", "sm": "sm_86"}


# --------------------------------------------------------------------------- matches, failures


def test_an_h200_build_on_the_h200_node_finds_nothing(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {"h200.log": H200_BUILD})
    out = collect(ReplaySources(bundle))
    assert out.findings == []
    assert out.not_judged == []
    (log,) = out.facts["logs"]
    assert log["built_on"] == {"gpu": "NVIDIA H200", "sm": "sm_90"}
    assert log["trt_version"] == "10.8.0"
    assert [g["engine_mismatch"] for g in out.facts["gpus"]] == [False, False]


def test_an_sm_90_log_without_a_name_matches_too(tmp_path: Path) -> None:
    text = H200_BUILD.replace("[I] Selected Device: NVIDIA H200\n", "")
    bundle = make_bundle(tmp_path, {"sm90.log": text})
    out = collect(ReplaySources(bundle))
    assert out.findings == []
    assert [g["engine_mismatch"] for g in out.facts["gpus"]] == [False, False]


def test_an_a100_build_without_fallbacks_is_a_mismatch_only(tmp_path: Path) -> None:
    text = H200_BUILD.replace("NVIDIA H200", "NVIDIA A100-SXM4-80GB").replace("9.0", "8.0")
    bundle = make_bundle(tmp_path, {"a100.log": text})
    out = collect(ReplaySources(bundle))
    assert codes(out) == [("tensorrt.engine_mismatch", "critical", None)]


def test_a_failed_build_is_critical(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {"failed.log": FAILED_BUILD})
    out = collect(ReplaySources(bundle))
    assert codes(out) == [("tensorrt.build_failed", "critical", None)]
    finding = out.findings[0]
    assert "2 errors" in finding.message
    assert "Could not find any implementation" in finding.message
    assert out.facts["logs"][0]["errors"] == [
        "10: Could not find any implementation for node {ForeignNode[/layers.7/Reshape_4]}.",
        "Build serialized network failed.",
    ]


def test_errors_in_a_build_that_passed_are_a_warning(tmp_path: Path) -> None:
    text = H200_BUILD.replace(
        "[08/29/2024-10:12:09] [I] Engine built",
        "[08/29/2024-10:12:05] [E] [TRT] 3: [runtime.cpp::~Runtime::346] Error Code 3: API "
        "Usage Error (Parameter check failed)\n[08/29/2024-10:12:09] [I] Engine built",
    )
    bundle = make_bundle(tmp_path, {"passed.log": text})
    out = collect(ReplaySources(bundle))
    assert codes(out) == [("tensorrt.build_errors", "warning", None)]
    # The same errors with no sign the build finished: critical.
    unfinished = "".join(
        line
        for line in text.splitlines(keepends=True)
        if "PASSED" not in line and "built" not in line
    )
    bundle2 = make_bundle(tmp_path / "2", {"unfinished.log": unfinished})
    assert codes(collect(ReplaySources(bundle2))) == [("tensorrt.build_failed", "critical", None)]


def test_precision_fallbacks_name_their_layers(tmp_path: Path) -> None:
    text = (
        "[W] [TRT] Missing scale and zero-point for tensor conv1/BiasAdd, expect fall back to "
        "non-int8 implementation for any layer consuming or producing given tensor\n"
        "[W] [TRT] Layer attn_softmax: FP16 kernel unavailable, running in FP32.\n"
    )
    bundle = make_bundle(tmp_path, {"int8.log": text})
    out = collect(ReplaySources(bundle))
    assert codes(out) == [("tensorrt.precision_fallback", "warning", None)]
    message = out.findings[0].message
    assert "2 layers kept at a higher precision" in message
    assert "conv1/BiasAdd (INT8→FP32)" in message and "attn_softmax (FP16→FP32)" in message
    assert [g["precision_fallbacks"] for g in out.facts["gpus"]] == [2, 2]
    assert [g["fallbacks"] for g in out.facts["gpus"]] == [0, 0]


def test_logs_that_name_no_gpu_are_listed_as_not_judged(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {"a.log": FAILED_BUILD, "sub/b.txt": FAILED_BUILD})
    out = collect(ReplaySources(bundle))
    assert [log["file"] for log in out.facts["logs"]] == ["tensorrt/a.log", "tensorrt/sub/b.txt"]
    assert out.not_judged == [
        "engine built for this node's GPUs: not judged for 2 logs that name no GPU model or "
        "compute capability (tensorrt/a.log, tensorrt/sub/b.txt)"
    ]
    assert [g["engine_mismatch"] for g in out.facts["gpus"]] == [None, None]


# --------------------------------------------------------------------------- reading


def test_undecodable_bytes_and_odd_line_ends_are_read(tmp_path: Path) -> None:
    raw = (
        b"[W] [TRT] Skipping tactic 3 due to insufficient \xff\xfe memory \xc3\x28\r\n"
        b"[E] [TRT] Build serialized network failed.\r"
        b"[I] Compute Capability: 9.0"
    )
    bundle = make_bundle(tmp_path, {"bytes.log": raw})
    out = collect(ReplaySources(bundle))
    (log,) = out.facts["logs"]
    assert log["errors"] == ["Build serialized network failed."]
    assert log["built_on"] == {"gpu": None, "sm": "sm_90"}
    assert len(log["fallbacks"]) == 1
    assert "\ufffd" in log["fallbacks"][0]["reason"]
    assert ("tensorrt.build_failed", "critical", None) in codes(out)


def test_an_unreadable_log_is_not_judged_and_the_rest_are_read(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {"good.log": H200_BUILD})
    (bundle / "tensorrt" / "folder.log").mkdir()
    out = collect(ReplaySources(bundle))
    assert out.error is None
    assert [log["file"] for log in out.facts["logs"]] == ["tensorrt/good.log"]
    assert len(out.not_judged) == 1
    assert out.not_judged[0].startswith("tensorrt/folder.log: could not be read: ")


def test_no_readable_log_is_an_error(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {})
    (bundle / "tensorrt" / "folder.log").mkdir(parents=True)
    out = collect(ReplaySources(bundle))
    assert out.error is not None and out.error.startswith("no TensorRT log could be read")


def test_display_names() -> None:
    path = Path("/tmp/x/tensorrt/bundle/tensorrt/sub/a.log")
    assert display_name(path, "replay") == "tensorrt/sub/a.log"
    assert display_name(Path("/var/log/trt/build.log"), "live") == "/var/log/trt/build.log"
    assert display_name(path, "live") == str(path)


# --------------------------------------------------------------------------- applicability


def test_skipped_with_a_reason_when_there_is_nothing_to_read(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {})
    sources = ReplaySources(bundle)
    check = TensorrtCheck()
    reason = check.applicable(sources, RunConfig())
    assert (
        reason == "no TensorRT build logs in the bundle (tensorrt/*.log|*.txt) and no --trt-probe"
    )
    probe_reason = check.applicable(sources, RunConfig(trt_probe=True))
    assert probe_reason is not None and "does not run when replaying a bundle" in probe_reason
    (result,) = run_checks([check], sources, RunConfig())
    assert result.status == Status.SKIPPED and result.skip_reason == reason


def test_applicable_with_logs(tmp_path: Path) -> None:
    bundle = make_bundle(tmp_path, {"x.txt": H200_BUILD})
    assert TensorrtCheck().applicable(ReplaySources(bundle), RunConfig()) is None


def test_registered_as_a_check() -> None:
    found = [c for c in discover() if getattr(c, "name", None) == "tensorrt"]
    assert len(found) == 1 and isinstance(found[0], Check)
    assert isinstance(found[0], TensorrtCheck)


def test_trt_probe_is_off_by_default() -> None:
    assert RunConfig().trt_probe is False
    assert RunConfig(trt_probe=True).trt_probe is True


# --------------------------------------------------------------------------- the corpus

_NAMES = sorted(p.name for p in (SHARED_CORPUS / "trt").glob("*.txt"))
# Corpus logs that say what they were built on (all others name no GPU): 016 prints
# "Compute Capability: 8.6", which no H200 (sm_90) can run.
_MISMATCHED = {"016-trt10-12-trtexec-device-banner-windows-plugin.txt"}


@pytest.mark.parametrize("name", _NAMES)
def test_corpus_log_through_the_check(corpus: Path, tmp_path: Path, name: str) -> None:
    sample = corpus / "trt" / name
    expected = json.loads(
        sample.with_name(name[: -len(".txt")] + ".expected.json").read_text(encoding="utf-8")
    )["logs"][0]
    assert set(expected) == FACT_KEYS
    bundle = make_bundle(tmp_path, {name: sample.read_bytes()})
    out = collect(ReplaySources(bundle))
    assert out.error is None
    (log,) = out.facts["logs"]
    assert {key: log[key] for key in FACT_KEYS} == expected
    assert log["file"] == f"tensorrt/{name}"
    assert log["truncated"] is False
    # The findings follow from the facts.
    found = {code for code, _, _ in codes(out)}
    assert ("tensorrt.fallback" in found) == bool(expected["fallbacks"])
    assert ("tensorrt.precision_fallback" in found) == bool(expected["precision_fallbacks"])
    assert ("tensorrt.build_failed" in found) == bool(expected["errors"])
    assert ("tensorrt.engine_mismatch" in found) == (name in _MISMATCHED)
    severities = {code: sev for code, sev, _ in codes(out)}
    assert severities.get("tensorrt.build_failed", "critical") == "critical"
    for gpu in out.facts["gpus"]:
        assert gpu["fallbacks"] == len(expected["fallbacks"])
        assert gpu["logs"] == [f"tensorrt/{name}"]


def test_whole_corpus_in_one_bundle(corpus: Path, tmp_path: Path) -> None:
    samples = sorted((corpus / "trt").glob("*.txt"))
    bundle = make_bundle(tmp_path, {p.name: p.read_bytes() for p in samples})
    out = collect(ReplaySources(bundle))
    files = [log["file"] for log in out.facts["logs"]]
    assert files == [f"tensorrt/{p.name}" for p in samples]
    expected = [
        json.loads(p.with_name(p.stem + ".expected.json").read_text(encoding="utf-8"))["logs"][0]
        for p in samples
    ]
    for log, want in zip(out.facts["logs"], expected, strict=True):
        assert {key: log[key] for key in FACT_KEYS} == want
    total = sum(len(want["fallbacks"]) for want in expected)
    assert [g["fallbacks"] for g in out.facts["gpus"]] == [total, total]
    # 016 (sm_86) is the only log that says what it was built on.
    assert [g["engine_mismatch"] for g in out.facts["gpus"]] == [True, True]
    criticals = [f for f in out.findings if f.severity == Severity.CRITICAL]
    assert {f.code for f in criticals} == {"tensorrt.engine_mismatch", "tensorrt.build_failed"}
