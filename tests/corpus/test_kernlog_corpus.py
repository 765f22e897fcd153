"""Every aer and xid sample of the shared corpus parses to exactly its annotated events,
directly, after the per-line prefilter, and through the chunked anchor search."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sitscheck.kernlog.needles as needles_module
import sitscheck.kernlog.scan as scan
from corpus_paths import corpus_root
from sitscheck.checks.pcie_aer.parse import AER_ANCHORS, HEAD_LINES, might_be_aer, parse_aer
from sitscheck.checks.xid.parse import XID_ANCHORS, might_be_xid, parse_xid
from sitscheck.contract.registry import discover
from sitscheck.kernlog.chunks import Anchor, iter_candidate_lines
from sitscheck.kernlog.lines import KernelLine, iter_kernel_lines


@dataclass(frozen=True)
class Kind:
    folder: str
    parse: Callable[[Iterable[KernelLine]], Sequence[Any]]
    might_be: Callable[[str], bool]
    anchors: Sequence[Anchor]
    head_lines: int
    minimum: int  # the annotated set the parsers were written against

    def facts(self, raw_lines: list[str]) -> list[dict[str, object]]:
        return [event.to_fact() for event in self.parse(iter_kernel_lines(raw_lines))]


KINDS = {
    "aer": Kind("aer", parse_aer, might_be_aer, AER_ANCHORS, HEAD_LINES, 13),
    "xid": Kind("xid", parse_xid, might_be_xid, XID_ANCHORS, 0, 19),
}
# Names are read at collection time; files are opened through the `corpus` fixture, which
# skips every case (with its message) when the corpus is absent.
_ROOT = corpus_root()
CASES = [
    (kind, path.name)
    for kind in KINDS
    for path in (sorted((_ROOT / kind).glob("*.txt")) if _ROOT else [])
] or [("aer", "<corpus absent>")]


def _expected(sample: Path) -> list[dict[str, object]]:
    path = sample.with_name(sample.name[: -len(".txt")] + ".expected.json")
    events: list[dict[str, object]] = json.loads(path.read_text())["events"]
    return events


@pytest.mark.parametrize(("kind", "name"), CASES)
def test_sample_matches_expected_events(corpus: Path, kind: str, name: str) -> None:
    sample = corpus / kind / name
    expected = _expected(sample)
    got = KINDS[kind].facts(sample.read_text().splitlines())
    assert len(got) == len(expected)
    for index, (event, want) in enumerate(zip(got, expected, strict=True)):
        assert {key: event[key] for key in want} == want, f"event {index}"


@pytest.mark.parametrize(("kind", "name"), CASES)
def test_prefilter_keeps_every_line_the_parser_needs(corpus: Path, kind: str, name: str) -> None:
    spec = KINDS[kind]
    raw = (corpus / kind / name).read_text().splitlines()
    assert spec.facts([line for line in raw if spec.might_be(line)]) == spec.facts(raw)


@pytest.mark.parametrize(("kind", "name"), CASES)
def test_bulk_prefilter_keeps_every_line_the_parser_needs(
    corpus: Path, kind: str, name: str
) -> None:
    spec = KINDS[kind]
    data = (corpus / kind / name).read_bytes()
    chunks = [data[at : at + 61] for at in range(0, len(data), 61)]
    kept = list(iter_candidate_lines(chunks, spec.anchors, head_lines=spec.head_lines))
    assert spec.facts(kept) == spec.facts(data.decode().splitlines())


def test_scan_file_finds_in_bulk_what_it_finds_line_by_line(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every sample in one log, apart by enough other lines that its chunks are searched in
    bulk (`NeedleFinder`), cut anywhere in a line: the same as one chunk searched with
    `bytes.find`, and the lines counted as `scan_lines` counts them."""
    filler = [f"[{n:6d}.000000] usb 1-4: new high-speed USB device number {n}" for n in range(900)]
    lines: list[str] = []
    for kind in sorted(KINDS):
        for sample in sorted((corpus / kind).glob("*.txt")):
            lines += sample.read_text().splitlines() + filler
    path = tmp_path / "kern.log"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(scan, "CHUNK_BYTES", 70_001)
    interests = scan.declared_interests(discover())
    bulk = scan.scan_file(path, interests)
    monkeypatch.setattr(scan, "CHUNK_BYTES", path.stat().st_size)
    monkeypatch.setattr(needles_module, "BULK_BYTES", path.stat().st_size + 1)
    assert bulk == scan.scan_file(path, interests)
    assert bulk[0] == len(lines)
    found = bulk[1]
    assert len(found["pcie_aer"]) >= KINDS["aer"].minimum
    assert len(found["xid"]) >= KINDS["xid"].minimum


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_corpus_is_present_and_paired(corpus: Path, kind: str) -> None:
    samples = sorted((corpus / kind).glob("*.txt"))
    assert len(samples) >= KINDS[kind].minimum
    for sample in samples:
        assert sample.with_name(sample.stem + ".expected.json").is_file(), sample.name
