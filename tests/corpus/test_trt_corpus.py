"""Every trt sample of the shared corpus scans to exactly its annotated facts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus_paths import corpus_root
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

# Names are read at collection time; the files are opened through the `corpus` fixture, which
# skips every case (with its message) when the corpus is absent.
_ROOT = corpus_root()
_NAMES = sorted(p.name for p in (_ROOT / "trt").glob("*.txt")) if _ROOT else ["<corpus absent>"]


@pytest.mark.parametrize("name", _NAMES)
def test_trt_sample_matches_expected_facts(corpus: Path, name: str) -> None:
    sample = corpus / "trt" / name
    expected_file = sample.with_name(name[: -len(".txt")] + ".expected.json")
    logs = json.loads(expected_file.read_text(encoding="utf-8"))["logs"]
    assert len(logs) == 1  # one log file per sample
    expected = logs[0]
    assert set(expected) == FACT_KEYS
    with sample.open(encoding="utf-8") as stream:  # streamed, line by line
        fact = scan_trt_log(stream, name).to_fact()
    assert {key: fact[key] for key in expected} == expected
    assert fact["file"] == name
    assert fact["truncated"] is False


def test_trt_corpus_is_present_and_paired(corpus: Path) -> None:
    samples = sorted((corpus / "trt").glob("*.txt"))
    assert len(samples) >= 13  # the annotated set this scanner was written against
    for sample in samples:
        assert sample.with_name(sample.stem + ".expected.json").is_file(), sample.name
