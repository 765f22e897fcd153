"""The two sets of real samples the conformance tests run over, both in the repository: the
shared corpus's samples (`tests/corpus/shared/<kind>/`, copied with their sources) and this
checkout's own (`tests/corpus/<kind>/`); SOURCES.md in each names where every sample came
from. Both follow one layout: `<kind>/NNN-name.txt` beside its hand-annotated
`NNN-name.expected.json`."""

from __future__ import annotations

from pathlib import Path

from corpus_paths import CORPUS, SHARED_CORPUS

OWN = CORPUS


def roots() -> dict[str, Path]:
    """`shared` and `own`, by name."""
    return {"shared": SHARED_CORPUS, "own": OWN}


def samples(kind: str) -> list[tuple[str, str]]:
    """(set, file name) of every `kind` sample, read at collection."""
    return [
        (name, path.name)
        for name, root in roots().items()
        for path in sorted((root / kind).glob("*.txt"))
    ]


def root_path(corpus_set: str) -> Path:
    return roots()[corpus_set]


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
