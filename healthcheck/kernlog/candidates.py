"""The lines of a kernel log that some anchors want, found a block of lines at a time.

A log is taken a block of whole lines at a time (`LogLines`), a line a fixed-width wrap broke
joined first (`lines.unwrap_lines`), its needles found in C, all at once (Rust's aho-corasick,
else one `re` alternation). Anchors want the lines holding their needles, the `before`/`after`
neighbours each asks for and the log's first `head_lines` lines (`Windows`). A block becomes
text only where a line of it is wanted; memory holds one block and the lines kept of it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress, islice, repeat
from operator import contains
from typing import IO

from ..errors import ProbeTimeout
from ..sources.files import MAX_LINE
from .anchor import Anchor
from .lines import LABEL, unwrap_lines

try:  # all needles in one pass over a block (SIMD), where a wheel installs
    from ahocorasick_rs import BytesAhoCorasick, MatchKind
except ImportError:
    AUTOMATON = False
else:
    AUTOMATON = True

# The start of a line that never continues the one above (`lines.continues`): a `dmesg`
# stamp, a /dev/kmsg record's header ("6,1234,5678901,-;") or its " KEY=value" lines.
_OWN = rb"\[|\d{1,4},\d+,\d+,[^;,\n]*(?:,[^;,\n]*)*;| [A-Z][A-Z0-9_]*="
_OWN_LINE, _MAY_CONTINUE = re.compile(_OWN), re.compile(rb"\n(?!" + _OWN + rb")")


def _continued(data: bytes, lines: list[str]) -> bool:
    """Whether a line after the first may continue the one above: not where each begins with a
    `dmesg` stamp or a /dev/kmsg record, nor where each carries a label (a tag, a device)."""
    if _MAY_CONTINUE.search(data) is None:
        return False
    return not all(map(contains, islice(lines, 1, None), repeat(LABEL)))


class ReadPastDeadline(ProbeTimeout):
    """The file was not read to its end by its reader's deadline (the check is UNKNOWN)."""


def read_chunks(handle: IO[bytes], deadline: float | None, size: int) -> Iterator[bytes]:
    """The file in pieces of `size` bytes; past `deadline` (monotonic), `ReadPastDeadline`."""
    while True:
        if deadline is not None and time.monotonic() >= deadline:
            raise ReadPastDeadline(
                "the kernel log was not read to its end by the deadline "
                f"({handle.tell()} bytes read)"
            )
        chunk = handle.read(size)
        if not chunk:
            return
        yield chunk


def file_blocks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines each chunk of a byte stream ends, joined by their breaks; the last line even
    without one. A line no chunk ends is kept to `MAX_LINE` bytes (and one chunk more)."""
    tail = b""
    for chunk in chunks:
        stop = chunk.rfind(b"\n")
        if stop < 0:
            tail = (tail + chunk)[:MAX_LINE] if len(tail) < MAX_LINE else tail
            continue
        block, tail = tail + chunk[:stop], chunk[stop + 1 :]
        yield block
    if tail:
        yield tail


class Block:
    """`count` whole lines of a log: their bytes joined by line breaks (`data`), the lines as
    UTF-8 text (bad bytes replaced), each joined to the lines after it that continue it
    (`lines`, made when first asked), those that hold a needle with their place (`hit_lines`),
    and whether the block ends the log (`final`)."""

    __slots__ = ("_lines", "count", "data", "final", "hit_lines")

    def __init__(self, data: bytes, count: int, lines: list[str] | None = None) -> None:
        self.data, self.count, self._lines = data, count, lines
        self.hit_lines: list[tuple[int, str]] = []
        self.final = False

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            lines = self.data.decode("utf-8", "replace").split("\n") if self.count else []
            self._lines = list(unwrap_lines(lines)) if _continued(self.data, lines) else lines
        return self._lines


class LogLines:
    """A log's whole lines, in blocks (`blocks`), each line joined to the lines after it that
    continue it (`lines.unwrap_lines`) and the lines holding a needle found; `count` counts
    the lines given."""

    def __init__(self, needles: Iterable[bytes]) -> None:
        self.count = 0
        self.held: bytes | None = None  # the last line: the next block may continue it
        unique = list(dict.fromkeys(needles))
        self.starts: Callable[[bytes], list[int]] = lambda data: []
        if AUTOMATON and unique:  # leftmost matches: at least one on each line with one
            found = BytesAhoCorasick(unique, matchkind=MatchKind.LeftmostFirst)
            self.starts = lambda data: [at for _, at, _ in found.find_matches_as_indexes(data)]
        elif unique:
            pattern = re.compile(b"|".join(map(re.escape, unique)))
            self.starts = lambda data: [match.start() for match in pattern.finditer(data)]

    def blocks(self, datas: Iterable[bytes]) -> Iterator[Block]:
        """The blocks of a log given as pieces of whole lines joined by their breaks: each
        one's lines but the last (the next may continue it), then that line at the end."""
        for data in datas:
            yield self._take(data)
        last = self._found(Block(self.held or b"", int(self.held is not None)))
        last.final = True
        yield last

    def _take(self, data: bytes) -> Block:
        if self.held is not None:
            data = self.held + b"\n" + data
        breaks = data.count(b"\n")
        self.count += breaks + (self.held is None)
        cut = data.rfind(b"\n")
        last, starts = data[cut + 1 :], self.starts(data)
        # No needle, not even across a line break (where one line continued another), and a
        # last line of its own: the lines are made only if asked for (`Block.lines`).
        if not starts and _OWN_LINE.match(last):
            if not self.starts(data.replace(b"\n", b"").replace(b"\r", b"")):
                self.held = last
                return Block(data[: max(cut, 0)], breaks)
        lines = data.decode("utf-8", "replace").split("\n")
        if _continued(data, lines):
            lines = list(unwrap_lines(lines))
            self.held = lines.pop().encode()
            return self._found(Block("\n".join(lines).encode(), len(lines), lines))
        lines.pop()
        self.held = last
        return self._found(Block(data[: max(cut, 0)], breaks, lines), starts)

    def _found(self, block: Block, starts: list[int] | None = None) -> Block:
        data, index, start, end = block.data, 0, 0, -1
        for at in self.starts(data) if starts is None else starts:
            if at < end or at >= len(data):
                continue  # on the line found last, or on the line held for the next block
            index += data.count(b"\n", start, at)
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at) % (len(data) + 1)  # (the block's end: no break)
            block.hit_lines.append((index, data[start:end].decode("utf-8", "replace")))
        return block


class Windows:
    """The lines of a log that some anchors want, in order, each once (`kept`)."""

    def __init__(self, anchors: Sequence[Anchor], head_lines: int = 0) -> None:
        windows: dict[str, tuple[int, int]] = {}
        for anchor in anchors:
            text = anchor.needle.decode()
            before, after = windows.get(text, (0, 0))
            windows[text] = (max(before, anchor.before), max(after, anchor.after))
        self.windows = list(windows.items())
        self.keep = max((before for before, _ in windows.values()), default=0)
        self.owed = head_lines  # lines wanted after those seen (an `after` window, the head)
        self.back: list[str] = []  # the last `keep` lines: a `before` window may want them
        self.back_wanted = bytearray()

    def kept(self, block: Block) -> list[str]:
        """The lines wanted of those held back and the block's, less the last `keep` of them
        unless the block is the log's last."""
        hits = [(i, w) for i, line in block.hit_lines for text, w in self.windows if text in line]
        if not (hits or self.owed or self.keep):
            return []  # (none of the block is made into text)
        lines = self.back + block.lines
        base, count = len(self.back), len(lines)
        wanted = self.back_wanted + bytearray(count - base)
        head = min(self.owed, count - base)
        wanted[base : base + head] = b"\x01" * head
        self.owed -= head
        for index, (before, after) in hits:
            first, last = max(base + index - before, 0), base + index + after + 1
            wanted[first : min(last, count)] = b"\x01" * (min(last, count) - first)
            self.owed = max(self.owed, last - count)
        cut = count if block.final else max(count - self.keep, 0)
        self.back, self.back_wanted = lines[cut:], wanted[cut:]
        return list(compress(lines[:cut], wanted[:cut]))
