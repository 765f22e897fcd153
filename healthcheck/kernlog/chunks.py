"""The lines of a large kernel log worth parsing, found without looking at every line.

A log is read in chunks; each chunk is searched in C for the anchors' needles (`needles`), and
only the lines holding one (with the neighbours an anchor asks for, and the log's first lines)
are decoded and handed on. Pure: bytes in, text lines out. A line a fixed-width wrap broke
(`lines.continues`) is handed on whole, its continuation joined to it (`lines.unwrap_lines`):
a continuation need hold no needle, and is kept because the line above it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from .anchor import Anchor
from .lines import LABEL, continues, may_continue, unwrap_lines
from .needles import Chunk, NeedleFinder

__all__ = [
    "Anchor",
    "Chunk",
    "count_newlines",
    "iter_candidate_batches",
    "iter_candidate_lines",
    "kept_needles",
]


MAX_TAIL = 64 * 1024
# a needle every this many bytes or closer: most lines hold one (the lines of a kernel log are
# 60-120 bytes long), so all of them are taken
DENSE_BYTES = 160
_NEAR = 16 * 1024  # a hit this close after another: the line breaks between them are counted


def iter_candidate_lines(
    chunks: Iterable[Chunk],
    anchors: Sequence[Anchor],
    *,
    head_lines: int = 0,
    keep: Sequence[bytes] | None = None,
) -> Iterator[str]:
    """The lines of `iter_candidate_batches`, one by one."""
    for batch in iter_candidate_batches(chunks, anchors, head_lines=head_lines, keep=keep):
        yield from batch


def iter_candidate_batches(
    chunks: Iterable[Chunk],
    anchors: Sequence[Anchor],
    *,
    head_lines: int = 0,
    keep: Sequence[bytes] | None = None,
) -> Iterator[list[str]]:
    """The lines of a byte stream (read in chunks of any size) that contain an anchor's needle,
    plus the anchor's `before`/`after` neighbours and the stream's first `head_lines` lines (the
    tail of a report cut off by the start of the log), each once and in order, as UTF-8 text.
    With `keep`, those of them that hold an anchor's needle or one of `keep` (found in C), and
    of the others at most those of a run of lines where these needles are dense (the rest are
    never made into text).

    Needles are found in C over whole chunks (`NeedleFinder`), so a large log with few matches
    costs little more than reading it; chunks are searched in place (anchors without `before`
    need no copy of them), and a chunk may be a buffer the caller refills once the lines of it
    have been taken. Only one chunk and the lines kept are held in memory. The lines come in
    lists, those of a chunk (or part of one) each: a reader loops over each list, not through
    this generator line by line.
    """
    scan = _ChunkScan(anchors, keep)
    scan.owed = head_lines
    tail = b""
    for chunk in chunks:
        first_end = chunk.find(b"\n") + 1
        if not first_end:
            # A line with no break yet: keep at most MAX_TAIL bytes of it (a log without line
            # breaks must not grow memory with its size, nor be copied over and over).
            tail = (tail + chunk)[:MAX_TAIL] if len(tail) < MAX_TAIL else tail
            continue
        start = 0
        if tail:
            joined = tail + chunk[:first_end]
            yield scan.lines(joined, 0, len(joined))
            start = first_end
        stop = chunk.rfind(b"\n") + 1
        if stop > start:
            yield scan.lines(chunk, start, stop)
        tail = bytes(chunk[stop:])
    last = tail + b"\n" if tail else b""
    yield scan.lines(last, 0, len(last), final=True)


class _ChunkScan:
    """Scans the whole lines buf[start:stop] of each chunk. The last `before` lines wait for the
    next chunk (a hit there may want them); `after` lines still owed at the end carry over, and
    so does a line taken at the end (`pending`), which the next chunk's first lines may
    continue."""

    def __init__(self, anchors: Sequence[Anchor], keep: Sequence[bytes] | None = None) -> None:
        self.anchors = anchors
        self.finder = NeedleFinder([anchor.needle for anchor in anchors])
        self.kept: NeedleFinder | None = None
        if keep is not None:
            self.kept = NeedleFinder(kept_needles(anchors, keep))
        self.keep = max((anchor.before for anchor in anchors), default=0)
        self.owed = 0
        self.held = b""
        self.held_ranges: list[tuple[int, int]] = []
        # the line taken last, where the chunk ends: it waits for the next chunk's first line,
        # which may continue it (`lines.continues`)
        self.pending: str | None = None

    def lines(self, buf: Chunk, start: int, stop: int, final: bool = False) -> list[str]:
        base = start
        if self.held:
            buf = self.held + buf[start:stop]
            base, start, stop = len(self.held), 0, len(self.held) + stop - start
        ranges = self.held_ranges + self._ranges(buf, start, base, stop)
        cut = stop if final or not self.keep else _back_lines(buf, start, stop, self.keep)
        out: list[str] = []
        sent = start
        if self.pending is not None:  # with the lines here that continue it
            line, sent = _continued(buf, self.pending, start, cut)
            out.append(line)
            self.pending = None
        spans: list[list[int]] = []  # the ranges before `cut`, those that touch joined
        carried: list[tuple[int, int]] = []
        for first, last in sorted(ranges):
            first = max(first, sent)
            if last <= first:
                continue
            if last > cut:
                carried.append((max(first, cut) - cut, last - cut))
            end = min(last, cut)
            if end > first:
                if spans and spans[-1][1] == first:
                    spans[-1][1] = end
                else:
                    spans.append([first, end])
            sent = last
        self.held = bytes(buf[cut:stop])
        self.held_ranges = carried
        taken = sent  # where the last line taken ends
        for first, end in spans:
            if self.kept is None:
                out.extend(_decode_lines(buf[first:end]))
                taken = end
            else:
                taken = _lines_at(buf, first, end, self.kept, out)
        if taken == cut and out and not final:
            self.pending = out.pop()
        return out

    def _ranges(self, buf: Chunk, floor: int, base: int, stop: int) -> list[tuple[int, int]]:
        """Byte ranges wanted for hits in buf[base:stop] (windows reach back to `floor`); sets
        the `after` lines still owed."""
        ranges: list[tuple[int, int]] = []
        owed = 0
        if self.owed:
            end, done = _skip_lines(buf, base, stop, self.owed)
            ranges.append((base, end))
            owed = self.owed - done
        found = self.finder.find(buf, base, stop)
        for anchor in self.anchors:
            hits = found[anchor.needle]
            after = anchor.after
            index = 0
            while index < len(hits):
                at = hits[index]
                line_start = buf.rfind(b"\n", base, at) + 1 or base
                first = _back_lines(buf, floor, line_start, anchor.before)
                # the hits after it on its line or within `after` lines of the one before (the
                # breaks between counted in C, by `count_newlines`): their windows and its make
                # one range
                index += 1
                while index < len(hits) and (
                    hits[index] - at <= _NEAR and count_newlines(buf[at : hits[index]]) <= after
                ):
                    at = hits[index]
                    index += 1
                line_end = buf.find(b"\n", at, stop) + 1
                if index == len(hits):
                    last, done = _skip_lines(buf, line_end, stop, after)
                    owed = max(owed, after - done)
                else:  # the next hit's window covers the rest: this one may stop at its line
                    following_start = buf.rfind(b"\n", line_end, hits[index]) + 1 or line_end
                    last, _ = _skip_lines(buf, line_end, following_start, after)
                ranges.append((first, last))
        self.owed = owed
        return ranges


def kept_needles(anchors: Sequence[Anchor], keep: Sequence[bytes] | None) -> tuple[bytes, ...]:
    """The needles of the lines `iter_candidate_batches` keeps: every anchor's and `keep`."""
    return tuple(dict.fromkeys([*(anchor.needle for anchor in anchors), *(keep or ())]))


def count_newlines(chunk: Chunk) -> int:
    """How many line breaks the chunk holds. `bytes.count` of one byte tests every byte in a
    loop the compiler cannot vectorize (it may stop at a count); `replace` counts the byte with
    memchr first, so deleting the breaks and comparing lengths costs about half (on a log of
    ordinary lines, each dozens of bytes long)."""
    return len(chunk) - len(chunk.replace(b"\n", b""))


def _decode_lines(block: Chunk) -> list[str]:
    """The whole lines of `block` as text, each continuation joined to the line above it
    (`lines.unwrap_lines`): decoded at once, then split (a line break is never part of a
    multi-byte sequence, so each line reads as it would decoded alone)."""
    lines = block.decode("utf-8", "replace").split("\n")[:-1]
    return list(unwrap_lines(lines)) if may_continue(lines) else lines


def _lines_at(buf: Chunk, first: int, end: int, finder: NeedleFinder, out: list[str]) -> int:
    """Add to `out` the lines of buf[first:end] (whole lines) that hold one of the finder's
    needles, each joined to the lines after it that continue it (`lines.continues`: they need
    hold no needle); all of them where the needles are dense (splitting them all costs less
    than finding each). Where the last line taken ends (`first` where none was)."""
    hits = finder.line_hits(buf, first, end)
    if len(hits) * DENSE_BYTES > end - first:
        out.extend(_decode_lines(buf[first:end]))
        return end
    find, rfind = buf.find, buf.rfind
    line_end = taken = first  # where the line looked at, and the line taken, last end
    for at in hits:
        if at < line_end:
            continue  # on the line just taken
        # a report's lines come together: the line after the one taken, found by its end
        following = find(b"\n", line_end, end) + 1
        if at < following:
            start, line_end = line_end, following
        else:
            start = rfind(b"\n", line_end, at) + 1 or line_end
            line_end = find(b"\n", at, end) + 1
            if taken != first and buf[taken] != _BRACKET:  # the lines between may continue it
                out[-1], taken = _continued(buf, out[-1], taken, start)
        line = buf[start : line_end - 1].decode("utf-8", "replace")
        # (a bracket or a label begins or marks a line of its own: told without a call)
        if buf[start] != _BRACKET and taken == start != first and LABEL not in line:
            if continues(out[-1], line):
                out[-1] = out[-1].rstrip("\r") + line
                taken = line_end
                continue
        out.append(line)
        taken = line_end
    if taken != first:
        out[-1], taken = _continued(buf, out[-1], taken, end)
    return taken


def _continued(buf: Chunk, line: str, line_end: int, end: int) -> tuple[str, int]:
    """`line` (ending at `line_end`) joined to the lines after it, before `end`, that continue
    it (`lines.continues`), and where the last of them ends."""
    while line_end < end and buf[line_end] != _BRACKET:
        following = buf.find(b"\n", line_end, end) + 1 or end
        text = buf[line_end : following - 1].decode("utf-8", "replace")
        if LABEL in text or not continues(line, text):
            break
        line = line.rstrip("\r") + text
        line_end = following
    return line, line_end


_BRACKET = ord("[")  # a `dmesg` line's first byte: a line of its own (`lines.continues`)


def _back_lines(buf: Chunk, floor: int, line_start: int, count: int) -> int:
    """Start of the line `count` lines above the one at `line_start`, not before `floor`."""
    first = line_start
    for _ in range(count):
        if first <= floor:
            return floor
        first = buf.rfind(b"\n", floor, first - 1) + 1 or floor
    return first


def _skip_lines(buf: Chunk, start: int, stop: int, count: int) -> tuple[int, int]:
    """End of the `count` lines from `start` (fewer before `stop`), and how many there were."""
    end = start
    done = 0
    while done < count and end < stop:
        end = buf.find(b"\n", end, stop) + 1
        done += 1
    return end, done
