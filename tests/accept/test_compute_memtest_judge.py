"""The compute check's digest comparisons (repeats, the node's GPUs of one model, the fp64
tile) and the memory test's ECC judgement, on records with the real H200's figures
(tests/accept/data/h200x1/accept)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from accept_bundles import RECORDS
from sitscheck.checks.compute.judge import judge as judge_compute
from sitscheck.checks.memtest.judge import judge as judge_memtest
from sitscheck.contract import CheckOutput
from sitscheck.contract.phase_record import Entry, PhaseRecord, parse_record
from sitscheck.probes.accept.gemm import max_rel_error

REAL_DIGEST = "45b692eb637d213d"  # the seeded 8192³ product's, on the H200 (torch and PTX)
OTHER_DIGEST = "45b692eb637d213c"


def _record(phase: str) -> PhaseRecord:
    return parse_record((RECORDS / f"{phase}.json").read_text())


def _gpus(phase: str, count: int, name: str = "NVIDIA H200", **result: Any) -> list[Entry]:
    real = _record(phase).gpus[0]
    return [
        Entry(
            index=i,
            uuid=f"GPU-{i:08x}",
            pci_bus_id=f"0000:{0x19 + i:02x}:00.0",
            name=name,
            status="ok",
            reason=None,
            doing=None,
            result={**json.loads(json.dumps(real.result)), **result},
        )
        for i in range(count)
    ]


def _with(entry: Entry, **result: Any) -> Entry:
    return Entry(**{**{f: getattr(entry, f) for f in entry.__struct_fields__},
                    "result": {**(entry.result or {}), **result}})  # fmt: skip


def _codes(out: CheckOutput) -> list[tuple[str, int | None]]:
    return sorted((f.code, f.device.index if f.device else None) for f in out.findings)


def _compute(entries: list[Entry]) -> CheckOutput:
    return judge_compute(_record("compute"), entries)


# ---------------------------------------------------------------- compute: across GPUs


def test_two_gpus_that_differ_are_both_flagged() -> None:
    """With two, neither is the majority: either could be the wrong one."""
    a, b = _gpus("compute", 2)
    out = _compute([a, _with(b, digest=OTHER_DIGEST)])
    assert _codes(out) == [("compute.node_mismatch", 0), ("compute.node_mismatch", 1)]
    assert [g["matches_node"] for g in out.facts["gpus"]] == [False, False]
    assert "no majority among" in out.findings[0].message


def test_three_gpus_one_differing_flags_only_it() -> None:
    a, b, c = _gpus("compute", 3)
    out = _compute([a, _with(b, digest=OTHER_DIGEST), c])
    assert _codes(out) == [("compute.node_mismatch", 1)]
    assert [g["matches_node"] for g in out.facts["gpus"]] == [True, False, True]
    message = out.findings[0].message
    assert message.startswith("GPU 1: silent data corruption suspected: digest 45b692eb637d213c")
    assert f"GPU 0 {REAL_DIGEST}" in message and f"GPU 2 {REAL_DIGEST}" in message


def test_agreeing_gpus_match_the_node() -> None:
    out = _compute(_gpus("compute", 4))
    assert _codes(out) == []
    assert [g["matches_node"] for g in out.facts["gpus"]] == [True] * 4
    assert not any("digest across GPUs" in n for n in out.not_judged)


def test_one_gpu_of_its_model_is_not_applicable_not_passed() -> None:
    h200s = _gpus("compute", 2)
    h100 = _gpus("compute", 3, name="NVIDIA H100 80GB HBM3", digest=OTHER_DIGEST)[2]
    out = _compute([*h200s, h100])
    assert _codes(out) == []  # another model's product may differ
    assert [g["matches_node"] for g in out.facts["gpus"]] == [True, True, None]
    assert out.not_judged == [
        "GPU 2: digest across GPUs: not applicable (the only NVIDIA H100 80GB HBM3 of the node)"
    ]


# ---------------------------------------------------------------- compute: repeats and the tile


def test_mismatched_repeats_are_listed_and_named() -> None:
    [gpu] = _gpus("compute", 1, mismatched=[3, 40])
    out = _compute([gpu])
    assert _codes(out) == [("compute.repeat_mismatch", 0)]
    assert out.facts["gpus"][0]["mismatched_repeats"] == [3, 40]
    assert "repeat(s) 3, 40 of 71" in out.findings[0].message
    assert [m.value for m in out.metrics if m.name.endswith("mismatched_repeats")] == [2]


def test_the_tile_beyond_bf16_tolerance_is_corruption() -> None:
    [gpu] = _gpus("compute", 1, reference_max_rel_error=0.0079)  # tolerance 0.00782
    assert _codes(_compute([gpu])) == [("compute.reference_error", 0)]
    [gpu] = _gpus("compute", 1, reference_max_rel_error=0.0078)
    assert _codes(_compute([gpu])) == []


def test_a_tile_of_nan_or_infinity_is_corruption_and_no_fact() -> None:
    for bad in (float("nan"), float("inf")):
        [gpu] = _gpus("compute", 1, reference_max_rel_error=bad)
        out = _compute([gpu])
        assert _codes(out) == [("compute.reference_error", 0)]
        assert out.facts["gpus"][0]["reference_max_rel_error"] is None


def test_no_tile_in_the_record_is_not_judged() -> None:
    [gpu] = _gpus("compute", 1, reference_max_rel_error=None)
    out = _compute([gpu])
    assert _codes(out) == []
    assert "GPU 0: the fp64 tile: no error or tolerance in the record" in out.not_judged


# ---------------------------------------------------------------- memtest: ECC around the test


def _ecc(**counts: Any) -> dict[str, Any]:
    return {"volatile_corrected": 0, "volatile_uncorrected": 0, "remap_pending": False,
            "remap_failure": False, "retired_pages": 0, **counts}  # fmt: skip


def _memtest(before: Any, after: Any) -> CheckOutput:
    [gpu] = _gpus("memtest", 1, ecc_before=before, ecc_after=after)
    return judge_memtest(_record("memtest"), [gpu])


def test_new_corrected_errors_are_a_warning_with_the_count() -> None:
    out = _memtest(_ecc(volatile_corrected=4), _ecc(volatile_corrected=11))
    assert _codes(out) == [("memtest.ecc_corrected", 0)]
    assert out.findings[0].severity.value == "warning"
    assert out.findings[0].message == ("GPU 0: 7 new corrected ECC error(s) during the memory test")


def test_new_uncorrected_errors_are_critical() -> None:
    out = _memtest(_ecc(volatile_uncorrected=1), _ecc(volatile_uncorrected=3))
    assert _codes(out) == [("memtest.ecc_uncorrected", 0)]
    assert "2 new uncorrectable ECC error(s)" in out.findings[0].message


def test_a_row_remap_failure_is_critical() -> None:
    out = _memtest(_ecc(), _ecc(remap_failure=True))
    assert _codes(out) == [("memtest.remap_failure", 0)]
    assert out.findings[0].message == "GPU 0: row remapping failed during the memory test"


def test_counts_that_were_there_before_are_not_new() -> None:
    """The real H100's aggregate and volatile counters are large on a healthy GPU: only what
    the test added counts, and a counter reset (driver reload) adds nothing."""
    assert _codes(_memtest(_ecc(volatile_corrected=281975), _ecc(volatile_corrected=281975))) == []
    assert _codes(_memtest(_ecc(volatile_corrected=9, volatile_uncorrected=2), _ecc())) == []


def test_no_ecc_reading_is_not_judged_never_passed() -> None:
    for before, after in ((None, _ecc()), (_ecc(), None), ({"volatile_corrected": "1"}, _ecc())):
        out = _memtest(before, after)
        assert _codes(out) == []
        assert out.not_judged == [
            "GPU 0: ECC counters not readable (no ECC reporting): only the patterns judged"
        ]
    assert _memtest(_ecc(), {"volatile_corrected": "1"}).facts["gpus"][0]["ecc_after"] is None


def test_a_malformed_first_bad_word_still_reports_the_count() -> None:
    [gpu] = _gpus("memtest", 1, bad_words=2, first_bad={"address": "0x10"})
    out = judge_memtest(_record("memtest"), [gpu])
    assert _codes(out) == [("memtest.bad_words", 0)]
    assert out.facts["gpus"][0]["first_bad"] is None
    assert out.findings[0].message == "GPU 0: 2 bad word(s) in 128.1 GiB"


# ---------------------------------------------------------------- the child's tile comparison


def test_the_childs_tile_error_is_nan_wherever_a_nan_stands() -> None:
    """A product of NaNs: Python's max() keeps a NaN only in the first place it reads."""
    reference = [1.0, -2.0, 0.5, 4.0]
    assert max_rel_error([1.0, -2.0, 0.5, 4.0], reference) == 0.0
    assert max_rel_error([1.0, -2.0, 0.5, 5.0], reference) == 0.25  # 1 off 4
    assert max_rel_error([1.0, -2.0, 0.6, 4.0], reference) == pytest.approx(0.1 / 5.3125**0.5)
    for place in range(4):
        got = [1.0, -2.0, 0.5, 4.0]
        got[place] = math.nan
        assert math.isnan(max_rel_error(got, reference)), place
    assert max_rel_error([math.inf, -2.0, 0.5, 4.0], reference) == math.inf


def test_a_memory_test_without_a_whole_pass_is_unknown() -> None:
    [gpu] = _gpus("memtest", 1, passes=0)
    out = judge_memtest(_record("memtest"), [gpu])
    assert out.error == "GPU 0: the memory test ended before a whole pass"
    [gpu] = _gpus("memtest", 1)
    assert judge_memtest(_record("memtest"), [gpu]).error is None
