"""Where the shared corpus of real samples lives (importable by test modules at collection)."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def corpus_root() -> Path | None:
    """The shared corpus: $SITSCHECK_CORPUS, else ../shared/corpus beside the checkout."""
    env = os.environ.get("SITSCHECK_CORPUS")
    candidates = [Path(env)] if env else []
    candidates.append(REPO_ROOT.parent / "shared" / "corpus")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return None
