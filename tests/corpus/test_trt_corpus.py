"""Every trt sample of the shared corpus and of this checkout's own (`corpus_sets`) scans to
exactly its annotated facts."""

from __future__ import annotations

import json

import pytest
from corpus_sets import (
    assert_present_and_paired,
    case_id,
    expected_path,
    roots,
    sample_path,
    samples,
)
from sitscheck.checks.tensorrt.parse import scan_trt_log

# facts.md "trt": the keys every annotated log object carries.
FACT_KEYS = {
    "trt_version",
    "built_on",
    "fallbacks",
    "precision_fallbacks",
    "errors",
    "warnings",
}
# Names are read at collection time.
CASES = samples("trt")
# the annotated sets this scanner was written against
MINIMUM = {"shared": 13, "own": 5}


@pytest.mark.parametrize(("corpus_set", "name"), CASES, ids=map(case_id, CASES))
def test_trt_sample_matches_expected_facts(corpus_set: str, name: str) -> None:
    sample = sample_path(corpus_set, "trt", name)
    logs = json.loads(expected_path(sample).read_text(encoding="utf-8"))["logs"]
    assert len(logs) == 1  # one log file per sample
    expected = logs[0]
    assert set(expected) == FACT_KEYS
    with sample.open(encoding="utf-8") as stream:  # streamed, line by line
        fact = scan_trt_log(stream, name).to_fact()
    assert {key: fact[key] for key in expected} == expected
    assert fact["file"] == name
    assert fact["truncated"] is False


@pytest.mark.parametrize("corpus_set", sorted(roots()))
def test_trt_corpus_is_present_and_paired(corpus_set: str) -> None:
    assert_present_and_paired(corpus_set, "trt", MINIMUM[corpus_set])
