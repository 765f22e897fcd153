"""Every real sample the conformance tests read is in the repository, named with its source."""

from __future__ import annotations

import pytest
from corpus_paths import REPO_ROOT
from corpus_sets import roots

KINDS = ("aer", "xid", "smi", "topo", "trt")


@pytest.mark.parametrize("corpus_set", sorted(roots()))
def test_every_sample_is_in_the_repository_with_its_source(corpus_set: str) -> None:
    root = roots()[corpus_set]
    assert root.is_relative_to(REPO_ROOT / "tests" / "corpus")  # never beside the checkout
    sources = (root / "SOURCES.md").read_text(encoding="utf-8")
    samples = [f"{kind}/{p.name}" for kind in KINDS for p in sorted((root / kind).glob("*.txt"))]
    assert len(samples) >= 20
    assert [s for s in samples if s not in sources] == []
