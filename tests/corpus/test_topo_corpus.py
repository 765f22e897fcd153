"""Every topo sample of the shared corpus and of this checkout's own (`corpus_sets`) parses to
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
from sitscheck.checks.topology.parse import parse_topo

# Names are read at collection time.
CASES = samples("topo")
# the annotated sets this parser was written against
MINIMUM = {"shared": 9, "own": 5}


@pytest.mark.parametrize(("corpus_set", "name"), CASES, ids=map(case_id, CASES))
def test_topo_sample_matches_expected_facts(corpus_set: str, name: str) -> None:
    sample = sample_path(corpus_set, "topo", name)
    expected = json.loads(expected_path(sample).read_text())
    assert parse_topo(sample.read_text()).to_fact() == expected


@pytest.mark.parametrize("corpus_set", sorted(roots()))
def test_topo_corpus_is_present_and_paired(corpus_set: str) -> None:
    assert_present_and_paired(corpus_set, "topo", MINIMUM[corpus_set])
