"""Every aer and xid sample of the shared corpus and of this checkout's own (`corpus_sets`)
parses to exactly its annotated events, directly, after the per-line prefilter, through the
check's candidate lines and through the whole scan. Raw lines are read as the scan reads them:
a line a fixed-width wrap broke is one line (`unwrap_lines`), before anything tests what it
holds."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sitscheck.kernlog.scan as scan
from corpus_sets import (
    assert_present_and_paired,
    case_id,
    expected_path,
    root_path,
    roots,
    sample_path,
    samples,
)
from fakes.kernel_lines import candidate_lines
from sitscheck.checks.pcie_aer.parse import AER_ANCHORS, HEAD_LINES, might_be_aer, parse_aer
from sitscheck.checks.xid.parse import XID_ANCHORS, might_be_xid, parse_xid
from sitscheck.contract.registry import discover
from sitscheck.kernlog.anchor import Anchor
from sitscheck.kernlog.lines import KernelLine, iter_kernel_lines, unwrap_lines


@dataclass(frozen=True)
class Kind:
    folder: str
    parse: Callable[[Iterable[KernelLine]], Sequence[Any]]
    might_be: Callable[[str], bool]
    anchors: Sequence[Anchor]
    head_lines: int
    minimum: int  # the shared annotated set the parsers were written against
    own_minimum: int  # this checkout's own samples (tests/corpus/<kind>)

    def facts(self, raw_lines: list[str]) -> list[dict[str, object]]:
        lines = iter_kernel_lines(unwrap_lines(raw_lines))
        return [event.to_fact() for event in self.parse(lines)]


KINDS = {
    "aer": Kind("aer", parse_aer, might_be_aer, AER_ANCHORS, HEAD_LINES, 13, 21),
    "xid": Kind("xid", parse_xid, might_be_xid, XID_ANCHORS, 0, 19, 0),
}
# Names are read at collection time.
CASES = [(corpus_set, kind, name) for kind in KINDS for corpus_set, name in samples(kind)]


def _expected(sample: Path) -> list[dict[str, object]]:
    events: list[dict[str, object]] = json.loads(expected_path(sample).read_text())["events"]
    return events


@pytest.mark.parametrize(("corpus_set", "kind", "name"), CASES, ids=map(case_id, CASES))
def test_sample_matches_expected_events(corpus_set: str, kind: str, name: str) -> None:
    sample = sample_path(corpus_set, kind, name)
    expected = _expected(sample)
    got = KINDS[kind].facts(sample.read_text().splitlines())
    assert len(got) == len(expected)
    for index, (event, want) in enumerate(zip(got, expected, strict=True)):
        assert {key: event[key] for key in want} == want, f"event {index}"


@pytest.mark.parametrize(("corpus_set", "kind", "name"), CASES, ids=map(case_id, CASES))
def test_prefilter_keeps_every_line_the_parser_needs(corpus_set: str, kind: str, name: str) -> None:
    spec = KINDS[kind]
    raw = sample_path(corpus_set, kind, name).read_text().splitlines()
    kept = [line for line in unwrap_lines(raw) if spec.might_be(line)]
    assert spec.facts(kept) == spec.facts(raw)


@pytest.mark.parametrize(("corpus_set", "kind", "name"), CASES, ids=map(case_id, CASES))
def test_candidate_lines_keep_every_line_the_parser_needs(
    corpus_set: str, kind: str, name: str
) -> None:
    spec = KINDS[kind]
    data = sample_path(corpus_set, kind, name).read_bytes()
    chunks = [data[at : at + 61] for at in range(0, len(data), 61)]
    kept = list(candidate_lines(chunks, spec.anchors, spec.head_lines))
    assert spec.facts(kept) == spec.facts(data.decode().splitlines())


@pytest.mark.parametrize("corpus_set", sorted(roots()))
def test_scan_file_finds_in_chunks_what_it_finds_in_one(corpus_set: str, tmp_path: Path) -> None:
    """Every sample in one log, apart by other lines, read in chunks that cut lines anywhere
    and in one: the same facts, and the lines counted as `scan_lines` counts them."""
    root = root_path(corpus_set)
    filler = [f"[{n:6d}.000000] usb 1-4: new high-speed USB device number {n}" for n in range(900)]
    lines: list[str] = []
    for kind in sorted(KINDS):
        for sample in sorted((root / kind).glob("*.txt")):
            lines += sample.read_text().splitlines() + filler
    path = tmp_path / "kern.log"
    path.write_text("\n".join(lines) + "\n")
    interests = scan.declared_interests(discover())
    chunked = _facts(scan.scan_file(path, interests, chunk_bytes=70_001))
    assert chunked == _facts(scan.scan_file(path, interests, chunk_bytes=path.stat().st_size))
    assert chunked == _facts(scan.scan_lines(lines, interests))
    assert chunked[0] == len(lines)
    found = chunked[1]
    aer, xid = KINDS["aer"], KINDS["xid"]
    shared = corpus_set == "shared"
    assert found["pcie_aer"]["event_count"] >= (aer.minimum if shared else aer.own_minimum)
    assert found["xid"]["event_count"] >= (xid.minimum if shared else xid.own_minimum)


def _facts(scanned: tuple[int, dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """The pass's results, the kernel-log checks' tallies as their storm facts."""
    lines, results = scanned
    return lines, {
        name: result.storm.facts(lambda e: e.to_fact()) if hasattr(result, "storm") else result
        for name, result in results.items()
    }


@pytest.mark.parametrize("corpus_set", sorted(roots()))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_corpus_is_present_and_paired(corpus_set: str, kind: str) -> None:
    spec = KINDS[kind]
    assert_present_and_paired(
        corpus_set, kind, spec.minimum if corpus_set == "shared" else spec.own_minimum
    )
