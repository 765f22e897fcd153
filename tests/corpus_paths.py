"""Where the real samples the tests read live: in the repository, never beside it
(importable by test modules at collection)."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS = REPO_ROOT / "tests" / "corpus"
# The samples of the project's shared corpus, copied with their sources (SOURCES.md there).
SHARED_CORPUS = CORPUS / "shared"
