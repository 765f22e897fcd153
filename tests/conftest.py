"""Shared fixtures: where the shared corpus of real samples lives."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_paths import REPO_ROOT, corpus_root

__all__ = ["REPO_ROOT", "corpus_root"]

@pytest.fixture(scope="session")
def corpus() -> Path:
    root = corpus_root()
    if root is None:
        pytest.skip("shared corpus absent: set SITSCHECK_CORPUS or place it at ../shared/corpus")
    return root
