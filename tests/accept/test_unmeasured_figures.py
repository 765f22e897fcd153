"""A figure the record does not hold is null in the facts, never 0 (facts.md, "Acceptance
checks": "a figure that could not be measured is null (and the reason is in the check's
notes), never 0"), and what cannot be judged without it is UNKNOWN with the reason, never a
pass: the memtest, compute and soak checks over the real H200's records
(tests/accept/data/h200x1/accept) with one figure taken out or spoilt at a time, and the
straggler rules over the composed 8×H200 node with one GPU's figure missing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from accept_bundles import RECORDS, check, eight_gpus, fired, read, replay, write
from sitscheck.checks.compute.facts import Facts as ComputeFacts
from sitscheck.checks.compute.judge import judge as judge_compute
from sitscheck.checks.memtest.facts import Facts as MemtestFacts
from sitscheck.checks.memtest.judge import judge as judge_memtest
from sitscheck.checks.soak.facts import Facts as SoakFacts
from sitscheck.checks.soak.judge import judge as judge_soak
from sitscheck.contract import CheckOutput
from sitscheck.contract.phase_record import Entry, PhaseRecord, parse_record

# a figure the record lacks, and the same figure as no count can be
SPOILT = (None, "12", -1, True, 1.5)


def _record(phase: str) -> PhaseRecord:
    return parse_record((RECORDS / f"{phase}.json").read_text())


def _judged(phase: str, judge: Any, key: str, value: Any = None, drop: bool = True) -> CheckOutput:
    """`judge` over the real record's GPU with `key` of its result dropped (or set)."""
    record = _record(phase)
    real = record.gpus[0]
    result = json.loads(json.dumps(real.result))
    if drop:
        del result[key]
    else:
        result[key] = value
    fields = {f: getattr(real, f) for f in real.__struct_fields__}
    out: CheckOutput = judge(record, [Entry(**{**fields, "result": result})])
    return out


def _metrics(out: CheckOutput) -> dict[str, float]:
    return {m.name: m.value for m in out.metrics}


# ---------------------------------------------------------------- memtest


@pytest.mark.parametrize("key", ["bytes_tested", "passes", "bad_words"])
def test_memtest_without_a_count_is_unknown_and_the_count_null(key: str) -> None:
    out = _judged("memtest", judge_memtest, key)
    (gpu,) = out.facts["gpus"]
    assert gpu[key] is None
    assert out.error == f"GPU 0: the record holds no {key}: the memory test not judged"
    msgspec.convert(out.facts, MemtestFacts)


@pytest.mark.parametrize("value", SPOILT)
def test_memtest_a_count_that_is_no_count_is_null(value: Any) -> None:
    out = _judged("memtest", judge_memtest, "bad_words", value, drop=False)
    assert out.facts["gpus"][0]["bad_words"] is None
    assert out.error is not None and "no bad_words" in out.error
    assert "sitscheck.accept.memtest.bad_words" not in _metrics(out)  # no 0 reported either


def test_memtest_without_its_time_keeps_the_verdict_and_says_what_is_not_compared() -> None:
    out = _judged("memtest", judge_memtest, "seconds")
    (gpu,) = out.facts["gpus"]
    assert gpu["seconds"] is None and gpu["bytes_tested"] > 0 and gpu["bad_words"] == 0
    assert out.error is None  # the patterns ran and found nothing: judged
    assert "GPU 0: the test's time is not in the record: its throughput not compared with " \
        "the other GPUs'" in out.not_judged  # fmt: skip
    msgspec.convert(out.facts, MemtestFacts)


def test_memtest_without_its_patterns_names_none() -> None:
    out = _judged("memtest", judge_memtest, "patterns")
    assert out.facts["gpus"][0]["patterns"] is None
    msgspec.convert(out.facts, MemtestFacts)


def test_memtest_bad_words_without_the_size_still_name_the_count() -> None:
    record = _record("memtest")
    real = record.gpus[0]
    result = {**(real.result or {}), "bad_words": 3}
    del result["bytes_tested"]
    fields = {f: getattr(real, f) for f in real.__struct_fields__}
    out = judge_memtest(record, [Entry(**{**fields, "result": result})])
    assert [f.message for f in out.findings] == ["GPU 0: 3 bad word(s)"]


# ---------------------------------------------------------------- compute


def test_compute_without_the_list_of_mismatched_repeats_is_unknown_not_none_mismatched() -> None:
    """A record that does not say which repeats differed says nothing about corruption."""
    out = _judged("compute", judge_compute, "mismatched")
    (gpu,) = out.facts["gpus"]
    assert gpu["mismatched_repeats"] is None
    assert out.error == "GPU 0: the record holds no mismatched_repeats: the repeats not judged"
    assert "sitscheck.accept.compute.mismatched_repeats" not in _metrics(out)
    msgspec.convert(out.facts, ComputeFacts)


@pytest.mark.parametrize("value", SPOILT)
def test_compute_without_a_repeat_count_is_unknown_and_the_count_null(value: Any) -> None:
    out = _judged("compute", judge_compute, "repeats", value, drop=value is None)
    assert out.facts["gpus"][0]["repeats"] is None
    assert out.error == "GPU 0: the record holds no repeats: the repeats not judged"
    msgspec.convert(out.facts, ComputeFacts)


def test_compute_with_no_repeat_finished_is_unknown() -> None:
    out = _judged("compute", judge_compute, "repeats", 0, drop=False)
    assert out.facts["gpus"][0]["repeats"] == 0  # measured: none finished
    assert out.error == "GPU 0: no repeat of the product finished"


@pytest.mark.parametrize(("key", "fact"), [("dtype", "dtype"), ("shape", "shape")])
def test_compute_without_its_dtype_or_shape_says_none_rather_than_guessing(
    key: str, fact: str
) -> None:
    out = _judged("compute", judge_compute, key)
    assert out.facts["gpus"][0][fact] is None
    msgspec.convert(out.facts, ComputeFacts)


def test_compute_the_healthy_record_is_judged_in_full() -> None:
    record = _record("compute")
    out = judge_compute(record, record.gpus)
    assert out.error is None
    (gpu,) = out.facts["gpus"]
    assert gpu["repeats"] > 0 and gpu["mismatched_repeats"] == []
    assert gpu["dtype"] == "bf16" and gpu["shape"] == [8192, 8192, 8192]


# ---------------------------------------------------------------- soak


def test_soak_without_the_loads_length_is_unknown_and_its_figures_null() -> None:
    out = _judged("soak", judge_soak, "seconds")
    (gpu,) = out.facts["gpus"]
    assert gpu["seconds"] is None and gpu["samples"] == 0 and gpu["tflops"]["median"] is None
    assert out.error == (
        "GPU 0: the record holds no seconds (how long the load ran): the soak not judged"
    )
    msgspec.convert(out.facts, SoakFacts)


def test_soak_the_healthy_record_is_judged() -> None:
    record = _record("soak")
    out = judge_soak(record, record.gpus)
    assert out.error is None and out.facts["gpus"][0]["seconds"] > 0


# ---------------------------------------------------------------- the rules over null figures


def test_the_memtest_stragglers_are_judged_around_a_gpu_without_its_time(tmp_path: Path) -> None:
    """GPU 3's memory-test time missing: the straggler rules still judge the others (GPU 5,
    30 % slow, critical), show GPU 3's figure as none, and none of them fails to evaluate."""
    bundle = eight_gpus(tmp_path, {5: 0.70})
    data = read(bundle, "memtest")
    for gpu in data["gpus"]:
        if gpu["index"] == 3:
            del gpu["result"]["seconds"]
    write(bundle, "memtest", data)
    _, report = replay(bundle)
    memtest = check(report, "memtest")
    assert memtest["facts"]["gpus"][3]["seconds"] is None
    verdicts = [v for v in report["verdicts"] if v["rule"].startswith("straggler.memtest")]
    assert [v for v in verdicts if v["status"] == "unknown"] == []
    assert [f for f in fired(report) if f[0].startswith("straggler.memtest")] == [
        ("straggler.memtest_throughput_critical", "critical", 5)
    ]
    message = next(v["message"] for v in verdicts if v["status"] == "critical")
    assert "GPU3 none" in message and "GPU5 161" in message
