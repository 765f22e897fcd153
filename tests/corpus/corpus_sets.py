"""The two sets of real samples the conformance tests run over: the shared corpus (when it is
present, see `corpus_paths`) and this checkout's own, `tests/corpus/<kind>/` (SOURCES.md there
names where each sample came from). Both follow one layout: `<kind>/NNN-name.txt` beside its
hand-annotated `NNN-name.expected.json`."""

from __future__ import annotations

from pathlib import Path

import pytest
from corpus_paths import corpus_root

OWN = Path(__file__).resolve().parent
ABSENT = "<shared corpus absent>"


def roots() -> dict[str, Path | None]:
    """`shared` (None when absent) and `own`, by name."""
    return {"shared": corpus_root(), "own": OWN}


def samples(kind: str) -> list[tuple[str, str]]:
    """(set, file name) of every `kind` sample, read at collection; a shared corpus that is
    absent gives one case that is skipped (`sample_path` says why)."""
    cases: list[tuple[str, str]] = []
    for name, root in roots().items():
        if root is None:
            cases.append((name, ABSENT))
            continue
        cases.extend((name, path.name) for path in sorted((root / kind).glob("*.txt")))
    return cases


def root_path(corpus_set: str) -> Path:
    """The set's folder; the test is skipped (with the reason) when it is absent."""
    root = roots()[corpus_set]
    if root is None:
        pytest.skip("shared corpus absent: set SITSCHECK_CORPUS or place it at ../shared/corpus")
    return root


def sample_path(corpus_set: str, kind: str, name: str) -> Path:
    return root_path(corpus_set) / kind / name


def expected_path(sample: Path) -> Path:
    return sample.with_name(sample.name[: -len(".txt")] + ".expected.json")


def case_id(case: tuple[str, ...]) -> str:
    return "/".join(case)


def assert_present_and_paired(corpus_set: str, kind: str, minimum: int) -> None:
    """At least `minimum` samples of `kind` in the set, each beside its annotation."""
    found = sorted((root_path(corpus_set) / kind).glob("*.txt"))
    assert len(found) >= minimum
    for sample in found:
        assert expected_path(sample).is_file(), sample.name
