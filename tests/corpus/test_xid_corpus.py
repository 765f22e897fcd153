"""Every xid sample of the shared corpus parses to exactly its annotated events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import corpus_root
from sitscheck.checks.xid.parse import might_be_xid, parse_xid
from sitscheck.kernlog.lines import iter_kernel_lines

# Names are read at collection time; the files are opened through the `corpus` fixture, which
# skips every case (with its message) when the corpus is absent.
_ROOT = corpus_root()
_NAMES = sorted(p.name for p in (_ROOT / "xid").glob("*.txt")) if _ROOT else ["<corpus absent>"]


def _expected(sample: Path) -> list[dict[str, object]]:
    events: list[dict[str, object]] = json.loads(
        sample.with_name(sample.name[: -len(".txt")] + ".expected.json").read_text()
    )["events"]
    return events


def _facts(raw_lines: list[str]) -> list[dict[str, object]]:
    return [event.to_fact() for event in parse_xid(iter_kernel_lines(raw_lines))]


@pytest.mark.parametrize("name", _NAMES)
def test_xid_sample_matches_expected_events(corpus: Path, name: str) -> None:
    sample = corpus / "xid" / name
    expected = _expected(sample)
    got = _facts(sample.read_text().splitlines())
    assert len(got) == len(expected)
    for index, (event, want) in enumerate(zip(got, expected, strict=True)):
        assert {key: event[key] for key in want} == want, f"event {index}"


@pytest.mark.parametrize("name", _NAMES)
def test_xid_prefilter_keeps_every_line_the_parser_needs(corpus: Path, name: str) -> None:
    raw = (corpus / "xid" / name).read_text().splitlines()
    assert _facts([line for line in raw if might_be_xid(line)]) == _facts(raw)


def test_xid_corpus_is_present_and_paired(corpus: Path) -> None:
    samples = sorted((corpus / "xid").glob("*.txt"))
    assert len(samples) >= 19  # the annotated set this parser was written against
    for sample in samples:
        assert sample.with_name(sample.stem + ".expected.json").is_file(), sample.name
