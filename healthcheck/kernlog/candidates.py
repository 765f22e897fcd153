"""The lines of a kernel log that some anchors want, found a block of lines at a time.

A log is taken a block of whole lines at a time (`LogLines`), a line a fixed-width wrap broke
joined first (`lines.unwrap_lines`), its needles found in C, all at once (Rust's aho-corasick,
else one `re` alternation). Anchors want the lines holding their needles, the `before`/`after`
neighbours each asks for and the log's first `head_lines` lines (`Windows`); an interest's
`wants` words (found in C too) narrow them to the lines holding one. A block becomes text
only where a line of it is wanted; memory holds one block and the lines kept of it.
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
    (`lines`, made when first asked: `data` and `count` then follow them), those that hold a
    needle with their place (`hit_lines`), and whether the block ends the log (`final`)."""

    __slots__ = ("_lines", "count", "data", "final", "hit_lines")

    def __init__(self, data: bytes, count: int, lines: list[str] | None = None) -> None:
        self.data, self.count, self._lines = data, count, lines
        self.hit_lines: list[tuple[int, str]] = []
        self.final = False

    @property
    def lines(self) -> list[str]:
        if self._lines is None:
            lines = self.data.decode("utf-8", "replace").split("\n") if self.count else []
            if _continued(self.data, lines):
                lines = list(unwrap_lines(lines))
                self.data, self.count = "\n".join(lines).encode(), len(lines)
            self._lines = lines
        return self._lines


def finder(words: Iterable[bytes]) -> Callable[[bytes], list[int]]:
    """Where the words occur in a block of bytes, found in C, all at once: at least one place
    on each line holding one (leftmost matches)."""
    unique = list(dict.fromkeys(words))
    if not unique:
        return lambda data: []
    if AUTOMATON:
        found = BytesAhoCorasick(unique, matchkind=MatchKind.LeftmostFirst)
        return lambda data: [at for _, at, _ in found.find_matches_as_indexes(data)]
    pattern = re.compile(b"|".join(map(re.escape, unique)))
    return lambda data: [match.start() for match in pattern.finditer(data)]


def line_numbers(data: bytes, places: Iterable[int]) -> list[int]:
    """The lines of `data` (split at its breaks) the places (in order) fall on, each once, by
    their index. A place past the end of `data` is ignored."""
    found, index, last = [-1], 0, 0
    for at in places:
        if at >= len(data):
            break
        index += data.count(b"\n", last, at)
        last = at
        if index != found[-1]:
            found.append(index)
    return found[1:]


class LogLines:
    """A log's whole lines, in blocks (`blocks`), each line joined to the lines after it that
    continue it (`lines.unwrap_lines`) and the lines holding a needle found; `count` counts
    the lines given."""

    def __init__(self, needles: Iterable[bytes]) -> None:
        self.count = 0
        self.held: bytes | None = None  # the last line: the next block may continue it
        self.starts = finder(needles)

    def blocks(self, datas: Iterable[bytes]) -> Iterator[Block]:
        """The blocks of a log given as pieces of whole lines joined by their breaks: each
        one's lines but the last (the next may continue it), then that line at the end."""
        for data in datas:
            yield self._take(data)
        last = self._found(Block(self.held or b"", int(self.held is not None)))
        last.final = True
        yield last

    def _take(self, data: bytes) -> Block:
        held = self.held is not None
        if self.held is not None:
            data = self.held + b"\n" + data
        cut = data.rfind(b"\n")
        last, starts = data[cut + 1 :], self.starts(data)
        # No needle, not even across a line break (where one line continued another), and a
        # last line of its own: the lines are made only if asked for (`Block.lines`).
        if not starts and _OWN_LINE.match(last):
            if not self.starts(data.replace(b"\n", b"").replace(b"\r", b"")):
                breaks = data.count(b"\n")
                self.count += breaks + (not held)
                self.held = last
                return Block(data[: max(cut, 0)], breaks)
        lines = data.decode("utf-8", "replace").split("\n")
        self.count += len(lines) - held
        if _continued(data, lines):
            lines = list(unwrap_lines(lines))
            self.held = lines.pop().encode()
            return self._found(Block("\n".join(lines).encode(), len(lines), lines))
        lines.pop()
        self.held = last
        return self._found(Block(data[: max(cut, 0)], len(lines), lines), starts)

    def _found(self, block: Block, starts: list[int] | None = None) -> Block:
        lines = block.lines  # (a place on the line held for the next block is past the end)
        places = self.starts(block.data) if starts is None else starts
        block.hit_lines = [(index, lines[index]) for index in line_numbers(block.data, places)]
        return block


class Windows:
    """The lines of a log that some anchors want, in order, each once (`kept`); with `wants`,
    only those of them that hold one of these words."""

    def __init__(
        self, anchors: Sequence[Anchor], head_lines: int = 0, wants: Sequence[bytes] = ()
    ) -> None:
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
        self.wants = finder(wants) if wants else None
        self.back_holding: list[int] = []  # of those, the ones holding a word of `wants`

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
        if self.wants is None:
            return list(compress(lines[:cut], wanted[:cut]))
        # of those, the lines holding a word (found in C where a line is wanted)
        holding = self.back_holding
        if wanted.find(1, base) >= 0:
            holding = holding + [base + i for i in line_numbers(block.data, self.wants(block.data))]
        self.back_holding = [i - cut for i in holding if i >= cut]
        return [lines[i] for i in holding if i < cut and wanted[i]]
