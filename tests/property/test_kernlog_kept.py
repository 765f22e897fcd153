"""The lines near an anchor that no interest could want are skipped in C (`wants_needles`,
`iter_candidate_lines(keep=...)`), and that changes nothing a handler is given:

- every line a check's `wants` test accepts holds one of its declared `wants_needles`;
- with `keep`, the candidate lines are those of the candidates without it that hold an
  anchor's needle or one of `keep` (any chunking, bytes that are not UTF-8), and of the
  others only some where the needles are dense;
- over a whole file, each handler is handed the same lines, in the same order, as when every
  line near an anchor is tested in Python.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import structs
from sitscheck.checks.infiniband.check import InfinibandCheck
from sitscheck.checks.pcie_aer.check import KERNEL_LOG as AER
from sitscheck.checks.pcie_aer.parse import might_be_aer
from sitscheck.checks.xid.check import KERNEL_LOG as XID
from sitscheck.checks.xid.parse import might_be_xid
from sitscheck.contract.declarations import KernelLogInterest
from sitscheck.kernlog.chunks import Anchor, iter_candidate_lines
from sitscheck.kernlog.scan import scan_file

# Pieces of the lines the tests and needles look at, and of the lines they do not.
_PIECES = [
    *("AER", "AER: ", "Error", "PCIe Bus Error: severity=", "error status/mask=", "status/mask"),
    *("DPC", "DPC: containment event", "aer_", "aer_status: 0x", "find device of ID"),
    *(":    [", ":  [", ": [", ": [ 0] ", ": [14] ", ": [0] ", ": [x", ":[", " [", "[ 0] "),
    *("Xid", "NVRM: ", "Xid (PCI:0000:19:00): 13", "fallen off the bus", "SXid"),
    *("CQ error on CQN ", "CQ overrun on CQN ", "0x487, syndrome 0x1"),
    *("nvidia 0000:19:00.0: ", "pcieport 0000:16:01.0: ", "received from 0000:19:00.0"),
    *("A", "E", "R", ":", " ", "[", "]", "0", "x", "error", "aer", "Xi", "d", "NV", "RM"),
    *("\x00", "\r", "\t", "ü", "kernel: "),
]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=8).map("".join)


@settings(max_examples=1000)
@given(line=_TEXT)
def test_every_line_a_wants_test_accepts_holds_one_of_its_needles(line: str) -> None:
    for test, interest in ((might_be_aer, AER), (might_be_xid, XID)):
        assert interest.wants_needles is not None
        if test(line):
            assert any(needle.decode() in line for needle in interest.wants_needles), line


def test_each_needle_is_one_a_wanted_line_may_hold_alone() -> None:
    """No needle is declared in vain: each is the only one of some line the test accepts."""
    alone = {
        b"AER": "x AER y",
        b"Error": "x Error y",
        b"status/mask": "x status/mask y",
        b"DPC": "x DPC y",
        b"aer_": "x aer_ y",
        b"find device of ID": "can't find device of ID00e5",
        b":    [": "x:    [x",
        b":  [": "x:  [x",
        b": [": "x: [14] CmpltTO",
        b"Xid": "x Xid y",
        b"NVRM": "x NVRM y",
        b"fallen off the bus": "GPU has fallen off the bus.",
    }
    for test, interest in ((might_be_aer, AER), (might_be_xid, XID)):
        assert interest.wants_needles is not None
        for needle in interest.wants_needles:
            line = alone[needle]
            assert test(line)
            assert [n for n in interest.wants_needles if n.decode() in line] == [needle]


def _holds(line: str, needles: list[bytes]) -> bool:
    return any(needle.decode() in line for needle in needles)


_BYTES_PIECES = [piece.encode() for piece in _PIECES] + [b"\xff", b"\xc3", b"\xe2\x82", b"\n"]


@settings(max_examples=500, deadline=None)
@given(
    data=st.lists(st.sampled_from(_BYTES_PIECES), max_size=200).map(b"".join),
    windows=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 6)), min_size=3, max_size=3),
    keep=st.lists(st.sampled_from([b"Error", b": [", b"x", b"RM", b"\t", b"aer_"]), max_size=3),
    head_lines=st.integers(0, 4),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=8),
)
def test_kept_candidates_are_the_candidates_that_hold_a_needle(
    data: bytes,
    windows: list[tuple[int, int]],
    keep: list[bytes],
    head_lines: int,
    cuts: list[int],
) -> None:
    anchors = [
        Anchor(needle, before, after)
        for needle, (before, after) in zip((b"AER", b"Xid", b"DPC"), windows, strict=True)
    ]
    edges = sorted({min(cut, len(data)) for cut in cuts})
    chunks = [data[a:b] for a, b in zip([0, *edges], [*edges, len(data)], strict=True)]
    every = list(iter_candidate_lines(chunks, anchors, head_lines=head_lines))
    kept = list(iter_candidate_lines(chunks, anchors, head_lines=head_lines, keep=keep))
    needles = [*keep, *(anchor.needle for anchor in anchors)]
    assert [line for line in kept if _holds(line, needles)] == [
        line for line in every if _holds(line, needles)
    ]
    rest = iter(every)
    assert all(any(line == other for other in rest) for line in kept)  # in order, from `every`


def test_the_window_lines_that_hold_no_needle_are_left_out() -> None:
    noise = [b"[    5.0] usb 1-4: new high-speed USB device %d" % n for n in range(10)]
    report = [
        b"[    6.0] pcieport 0000:16:01.0: AER: Corrected error message received from 0000:19:00.0",
        b"[    6.0] nvidia 0000:19:00.0:    [ 0] RxErr                  (First)",
    ]
    data = b"\n".join([*noise, report[0], *noise, report[1], *noise]) + b"\n"
    anchors = [Anchor(b"AER", after=48)]
    assert len(list(iter_candidate_lines([data], anchors))) == 22
    kept = list(iter_candidate_lines([data], anchors, keep=[b":    ["]))
    assert kept == [line.decode() for line in report]


class Seen:
    """A handler that keeps each line it is handed."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str | None]] = []

    def feed(self, line: Any) -> None:
        self.lines.append((line.body, line.time))

    def feed_text(self, body: str, time: str | None) -> None:
        self.lines.append((body, time))

    def finish(self) -> list[tuple[str, str | None]]:
        return self.lines


def _seen(interest: KernelLogInterest, needles: bool) -> KernelLogInterest:
    wants_needles = interest.wants_needles if needles else None
    return structs.replace(interest, handler=f"{__name__}:Seen", wants_needles=wants_needles)


_INTERESTS = {"pcie_aer": AER, "xid": XID, "infiniband": InfinibandCheck.kernel_log}
_STAMPS = ["[    5.015300] ", "[  +0.000316] ", "Sep 19 16:18:02 node kernel: ", ""]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(
        st.tuples(st.sampled_from(_STAMPS), st.lists(st.sampled_from(_BYTES_PIECES[:-1]))),
        max_size=150,
    ),
)
def test_each_handler_is_handed_the_lines_it_was_without_the_needles(
    lines: list[tuple[str, list[bytes]]],
) -> None:
    data = b"".join(stamp.encode() + b"".join(pieces) + b"\n" for stamp, pieces in lines)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kern.log"
        path.write_bytes(data)
        tested = scan_file(path, {n: _seen(i, False) for n, i in _INTERESTS.items()})
        skipped = scan_file(path, {n: _seen(i, True) for n, i in _INTERESTS.items()})
    assert skipped == tested
