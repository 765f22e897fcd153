"""Find candidate lines in a large kernel-log file without looking at every line in Python.

The file is read in binary chunks; each needle is located with `bytes.find` (C speed) and
only the lines that hold one are decoded and handed on, in file order. The needles are a
superset of the parsers' own line tests, which are applied afterwards: nothing a parser
needs is dropped, and a 1 GB log with few matches costs about as much as `grep` reading it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CHUNK = 8 * 1024 * 1024
MAX_LINE = 64 * 1024
NEEDLES = (
    b"AER",
    b"PCIe Bus Error",
    b"status/mask",
    b"Hardware Error",
    b"aer_",
    b"find device of ID",
    b"Xid",
    b"NVRM",
    b"fallen off the bus",
)
# AER bit lines (`pcieport 0000:00:01.0:    [ 6] BadTLP`, whitespace-collapsed `: [6] BadTLP`).
BIT_LINE = re.compile(rb": +\[ ?\d")


@dataclass
class LineCounter:
    lines: int = 0


def candidate_lines(path: Path, counter: LineCounter) -> Iterator[str]:
    with path.open("rb") as handle:
        carry = b""
        while True:
            block = handle.read(CHUNK)
            if not block:
                break
            data = carry + block
            cut = data.rfind(b"\n")
            if cut < 0 and len(data) < MAX_LINE:
                carry = data
                continue
            if cut < 0:
                cut = len(data) - 1  # a line longer than MAX_LINE: cut it here
            body, carry = data[: cut + 1], data[cut + 1 :]
            counter.lines += body.count(b"\n")
            yield from _lines_with_needles(body)
        if carry:
            counter.lines += 1
            yield from _lines_with_needles(carry + b"\n")


def _lines_with_needles(body: bytes) -> Iterator[str]:
    starts: set[int] = set()
    for needle in NEEDLES:
        position = body.find(needle)
        while position >= 0:
            start = body.rfind(b"\n", 0, position) + 1
            starts.add(start)
            end = body.find(b"\n", position)
            position = body.find(needle, end)
    for match in BIT_LINE.finditer(body):
        starts.add(body.rfind(b"\n", 0, match.start()) + 1)
    for start in sorted(starts):
        end = body.find(b"\n", start)
        line = body[start : min(end, start + MAX_LINE)]
        yield line.replace(b"\x00", b"").decode("utf-8", errors="replace").rstrip("\r")
