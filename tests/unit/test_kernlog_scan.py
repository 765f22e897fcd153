"""sitscheck.kernlog.scan: each handler is fed, as message and time, the lines its interest
wants, the same from a file read in chunks of any size (`scan_file`) as from lines given one
by one (`scan_lines`) and as a line-by-line reference finds them; a deadline stops the read."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import sitscheck.kernlog.candidates as candidates
import sitscheck.kernlog.scan as scan
from sitscheck.contract import Anchor, KernelLogInterest
from sitscheck.contract.declarations import resolve
from sitscheck.contract.registry import discover
from sitscheck.kernlog.candidates import MAX_LINE, ReadPastDeadline
from sitscheck.kernlog.lines import iter_kernel_lines, unwrap_lines
from sitscheck.sources.scope import Scope, entered

OWN_CORPUS = Path(__file__).resolve().parents[1] / "corpus"
SEEN = "fakes.kernel_lines:Seen"  # keeps every line's message and time

REPORT = [
    "[ 5.100000] pcieport 0000:16:01.0: AER: Corrected error message received from 0000:19:00.0",
    "[ 5.100000] nvidia 0000:19:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer,"
    " (Receiver ID)",
    "[ 5.100000] nvidia 0000:19:00.0:   device [10de:2335] error status/mask=00000001/0000e000",
    "[ 5.100000] nvidia 0000:19:00.0:    [ 0] RxErr                  (First)",
]
XID = "[ 6.200000] NVRM: Xid (PCI:0000:19:00): 79, pid=1234, name=python3, GPU has fallen off"
SXID = "[ 6.300000] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 32 MINION"
FILLER = [
    "[ 7.000000] EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode.",
    "[ 7.000001] IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
    "[ 7.000002] Сен 19 журнал: ünïcödé",
]


def _log(lines: int) -> list[str]:
    out: list[str] = []
    for n in range(lines):
        if n % 1000 == 0:
            out += REPORT
        elif n % 1000 == 500:
            out += [XID, SXID]
        else:
            out.append(FILLER[n % len(FILLER)])
    return out


PLUGINS = {
    # neighbours before and after its anchor's lines, all of them its handler's
    "around": KernelLogInterest(anchors=(Anchor(b"IPv6", before=2, after=1),), handler=SEEN),
    # `wants`: of the lines near its anchor (one held back from the block before), those
    # holding one of its words
    "usb": KernelLogInterest(
        anchors=(Anchor(b"usb", before=1, after=2),),
        handler=SEEN,
        wants=(b"USB", b"IPv6"),
    ),
    "head": KernelLogInterest(anchors=(Anchor(b"Xid"),), handler=SEEN, head_lines=5),
}


def _interests(plugins: bool) -> dict[str, KernelLogInterest]:
    shipped = scan.declared_interests(discover())
    return {**shipped, **PLUGINS} if plugins else shipped


def _storm(reports: int) -> list[str]:
    out: list[str] = []
    for n in range(reports):
        out += FILLER * 5 + ["[ 7.1] usb 1-4: new high-speed USB device number 3"] + REPORT
        if n % 50 == 0:
            out.append(XID)
    return out


def _folded(lines: list[str], width: int) -> list[str]:
    """The lines broken every `width` characters, as a fixed-width wrap breaks them."""
    return [line[at : at + width] for line in lines for at in range(0, len(line) or 1, width)]


LOGS: dict[str, bytes] = {
    "storm": ("\n".join(_storm(1500)) + "\n").encode(),
    # facts.md "aer": broken at 76 columns (a commit message's), each report's long lines too
    "folded": ("\n".join(_folded(_storm(300), 76)) + "\n").encode(),
    "sparse": ("\n".join(_log(20_000)) + "\n").encode(),
    "dense": ("\n".join(REPORT * 3000) + "\n").encode(),
    # the log starts inside a report (`head_lines`) and its last line has no line break
    "cut_off_unterminated": "\n".join(REPORT[1:] + _log(8000) + REPORT).encode(),
    "bad_utf8": b"\n".join(
        line.encode() + (b" \xff\xfe\xc3" if n % 3 == 0 else b"")
        for n, line in enumerate(_storm(300))
    )
    + b"\n",
    "crlf": ("\r\n".join(_storm(300)) + "\r\n").encode(),
    "empty": b"",
}


def reference(data: bytes, interests: Mapping[str, KernelLogInterest]) -> dict[str, Any]:
    """Line by line: each interest's lines are those of the whole log, its wrapped lines
    joined, that hold one of its needles, with their neighbours and the log's first lines,
    and that hold one of the words it `wants`; its handler is fed each one's message and time."""
    text = data.decode("utf-8", "replace")
    raw = text.split("\n")[:-1] if text.endswith("\n") else text.split("\n") if text else []
    lines = list(unwrap_lines(raw))
    results: dict[str, Any] = {}
    for name, interest in interests.items():
        wanted = set(range(interest.head_lines))
        for index, line in enumerate(lines):
            for anchor in interest.anchors:
                if anchor.needle.decode() in line:
                    wanted.update(range(index - anchor.before, index + anchor.after + 1))
        words = [word.decode() for word in interest.wants]
        mine = [
            lines[i]
            for i in sorted(wanted)
            if 0 <= i < len(lines) and (not words or any(word in lines[i] for word in words))
        ]
        handler = resolve(interest.handler)()
        for line in iter_kernel_lines(mine):
            handler.feed(line.body, line.time)
        results[name] = handler.finish()
    return results


def _state(value: object) -> object:
    """Everything a handler's result holds, as plain data (tallies have no equality)."""
    if isinstance(value, dict):
        return {repr(k): _state(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_state(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(repr(v) for v in value)
    if callable(value) and not hasattr(value, "__dict__") and not hasattr(value, "__slots__"):
        return "callable"
    names = [n for c in type(value).__mro__ for n in getattr(c, "__slots__", ())]
    fields = {n: getattr(value, n) for n in names if hasattr(value, n)}
    fields.update(getattr(value, "__dict__", {}))
    if not fields:
        return value
    return {type(value).__name__: {n: _state(v) for n, v in fields.items() if not callable(v)}}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_a_file_in_chunks_and_its_lines_give_each_handler_the_references_lines(
    name: str, tmp_path: Path
) -> None:
    data = LOGS[name]
    path = tmp_path / "kern.log"
    path.write_bytes(data)
    interests = _interests(plugins=True)
    count = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    expected = _state(reference(data, interests))
    for chunk_bytes in (70_001, 4096, 333):
        found = scan.scan_file(path, interests, chunk_bytes=chunk_bytes)
        assert _state(found) == [count, expected]
    lines = data.decode("utf-8", "replace").splitlines(keepends=True)
    found = scan.scan_lines(lines, interests)
    assert _state(found) == [len(lines), expected]
    if name == "storm":
        found = scan.scan_file(path, interests)[1]
        assert (found["pcie_aer"].count, found["xid"].count, len(found["usb"])) == (1500, 30, 1500)


@pytest.mark.parametrize("name", ["storm", "folded", "bad_utf8", "cut_off_unterminated"])
def test_without_the_automaton_the_same_lines_are_found(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no ahocorasick-rs wheel installs, one `re` alternation finds the needles."""
    monkeypatch.setattr(candidates, "AUTOMATON", False)
    path = tmp_path / "kern.log"
    path.write_bytes(LOGS[name])
    interests = _interests(plugins=True)
    found = scan.scan_file(path, interests, chunk_bytes=4096)
    assert _state(found[1]) == _state(reference(LOGS[name], interests))


@pytest.mark.parametrize("newline_at_end", [True, False])
def test_scan_file_gives_what_scan_lines_gives(tmp_path: Path, newline_at_end: bool) -> None:
    chunk_bytes = 100_003  # lines straddle every chunk boundary
    lines = _log(20_000)
    path = tmp_path / "kern.log"
    path.write_text("\n".join(lines) + ("\n" if newline_at_end else ""))
    assert path.stat().st_size > 10 * chunk_bytes
    interests = scan.declared_interests(discover())
    count, found = scan.scan_file(path, interests, chunk_bytes=chunk_bytes)
    lines_count, lines_found = scan.scan_lines(lines, interests)
    assert count == lines_count
    assert _state(found) == _state(lines_found)
    assert (count, found["pcie_aer"].count, found["xid"].count) == (len(lines), 20, 40)


def test_a_line_without_a_break_is_kept_to_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "kern.log"
    path.write_bytes(b"[ 1.0] Xid " + b"x" * (5 * MAX_LINE) + b"\n[ 2.0] Xid y\n")
    interest = {"head": PLUGINS["head"]}
    count, found = scan.scan_file(path, interest, chunk_bytes=MAX_LINE // 4)
    assert count == 2
    (first, _), second = found["head"]
    assert len(first) < 2 * MAX_LINE and second == ("Xid y", "2.0")


# A commit message's report, hard-folded at 76 columns: two continuations hold no needle and
# no device prefix ("yer, id=00e0(Receiver ID)", "2000"). tests/corpus/SOURCES.md says whence.
FOLDED = OWN_CORPUS / "aer" / "020-commit-message-folded-76-physical-la-yer-status-mask-split.txt"


def test_a_line_a_wrap_broke_is_read_whole_wherever_a_chunk_ends(tmp_path: Path) -> None:
    """facts.md "aer": a continuation of a fixed-width wrap is one line with the line above it.
    It holds no needle, yet it is kept because the line above it is, and the two are joined,
    wherever a chunk of the file ends (right after the broken line, inside the continuation)
    and over the lines given one by one (`scan_lines`). The sample begins the log (its report's
    header was cut off: the log's first lines are read whatever they hold) and the rest is far
    from it."""
    sample = FOLDED.read_text().splitlines()
    expected = json.loads(FOLDED.with_name(FOLDED.stem + ".expected.json").read_text())["events"]
    lines = sample + FILLER * 1000
    path = tmp_path / "kern.log"
    path.write_text("\n".join(lines) + "\n")
    ends = [len("\n".join(sample[: n + 1])) + 1 for n in range(len(sample))]
    interests = scan.declared_interests(discover())
    runs = [scan.scan_lines(lines, interests)]
    for chunk_bytes in (ends[0], ends[2], ends[0] + 5, 100_003):
        runs.append(scan.scan_file(path, interests, chunk_bytes=chunk_bytes))
    for count, found in runs:
        events = found["pcie_aer"].storm.facts(lambda e: e.to_fact())["events"]
        assert (count, len(events)) == (len(lines), len(expected))
        got = [{key: e[key] for key in want} for e, want in zip(events, expected, strict=True)]
        assert got == expected


def test_the_scans_reading_stops_at_its_deadline(tmp_path: Path) -> None:
    path = tmp_path / "kern.log"
    path.write_bytes(LOGS["sparse"])
    with entered(Scope(deadline=time.monotonic() - 1)):
        with pytest.raises(ReadPastDeadline, match="not read to its end by the deadline"):
            scan.scan_file(path, _interests(plugins=False))


@pytest.mark.parametrize("lines", [[], [""], ["a\n", "", "b"], ["x"] * 4097, [""] * 4097])
def test_lines_given_one_by_one_are_counted_as_given(lines: list[str]) -> None:
    assert scan.scan_lines(lines, _interests(plugins=False))[0] == len(lines)
