"""Every topo sample of the shared corpus parses to exactly its annotated facts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from corpus_paths import corpus_root
from sitscheck.checks.topology.parse import parse_topo

# Names are read at collection time; the files are opened through the `corpus` fixture, which
# skips every case (with its message) when the corpus is absent.
_ROOT = corpus_root()
_NAMES = sorted(p.name for p in (_ROOT / "topo").glob("*.txt")) if _ROOT else ["<corpus absent>"]


@pytest.mark.parametrize("name", _NAMES)
def test_topo_sample_matches_expected_facts(corpus: Path, name: str) -> None:
    sample = corpus / "topo" / name
    expected = json.loads(sample.with_name(name[: -len(".txt")] + ".expected.json").read_text())
    assert parse_topo(sample.read_text()).to_fact() == expected


def test_topo_corpus_is_present_and_paired(corpus: Path) -> None:
    samples = sorted((corpus / "topo").glob("*.txt"))
    assert len(samples) >= 9  # the annotated set this parser was written against
    for sample in samples:
        assert sample.with_name(sample.stem + ".expected.json").is_file(), sample.name
