"""Every offset where one of a few byte strings begins in a large buffer, found in C.

Used by the kernel-log pre-filter (`chunks`) to find its anchors' needles in each chunk of a
log: a log of a gigabyte with few matches must cost little more than reading it (issue 10).
"""

from __future__ import annotations

import codecs
import re
import time
from collections.abc import Callable, Iterable
from typing import ParamSpec, TypeAlias

Chunk: TypeAlias = bytes | bytearray

# A region this long or longer is searched by `NeedleFinder`'s bulk methods; a shorter one
# with `bytes.find`.
BULK_BYTES = 64 * 1024
_SAMPLE_BYTES = 64 * 1024  # how much of the log the search methods are timed on
_RETUNE_BYTES = 256 * 1024 * 1024  # and how often they are timed again


class NeedleFinder:
    """Every offset in buf[lo:hi] where a needle begins, per needle, in order.

    A long region is searched two bytes at a time: decoded as UTF-16-LE, once from an even and
    once from an odd offset, it is two strings of 16-bit units in which any two adjacent bytes
    of the region are one character of one of them. CPython finds a one-character substring of
    such a string with memchr on the character's low byte and compares the whole unit in C. So
    each needle is searched as one pair of its bytes ("Xi" of "Xid", "Ha" of "[Hardware
    Error]"), and only the places where that pair occurs reach Python, where the needle is
    compared. On a log, whose letters are common but whose pairs of them are rare, that is
    several times faster than `re` or `bytes.find` (which look at every byte).

    Which pair of a needle is searched, and whether a needle is searched this way at all, is
    timed on a sample of the log (`_tune`): what a pair costs is how often memchr stops at its
    low byte and where (a run of stops is scanned unit by unit), and decoding text that is not
    ASCII costs several times more. The other way is `re` (a literal's first byte found in a
    tight C loop). `re` also searches a region the decoder does not map one unit to two bytes
    (a UTF-16 surrogate: a byte D8-DF at that offset), and a needle whose pair is found too
    often where the needle is not (a budget per region). Both ways give the same offsets.
    """

    def __init__(self, needles: Iterable[bytes]) -> None:
        self.needles = tuple(dict.fromkeys(needles))
        self.literal = {needle: re.compile(re.escape(needle)) for needle in self.needles}
        self.pairs: dict[bytes, tuple[int, str]] = {}  # needle -> (offset of its pair, unit)
        self.until_tune = 0
        self.odd = bytearray()

    def find(self, buf: Chunk, lo: int, hi: int) -> dict[bytes, list[int]]:
        hi = min(hi, len(buf))
        if hi - lo < BULK_BYTES:
            return {needle: find_all(buf, needle, lo, hi) for needle in self.needles}
        if self.until_tune <= 0:
            pairs = self._tune(buf, lo, min(hi, lo + _SAMPLE_BYTES))
            self.pairs = pairs or {}
            self.until_tune = _RETUNE_BYTES if pairs is not None else 0  # else: the next region
        self.until_tune -= hi - lo
        found: dict[bytes, list[int]] = {needle: [] for needle in self.needles}
        literal = {needle for needle in self.needles if needle not in self.pairs}
        if len(literal) < len(self.needles):
            self._find_pairs(buf, lo, hi, found, literal)
        for needle in self.needles:
            if needle in literal:
                found[needle] = self._literal_hits(buf, needle, lo, hi)
            else:
                found[needle].sort()
        return found

    def _find_pairs(
        self, buf: Chunk, lo: int, hi: int, found: dict[bytes, list[int]], literal: set[bytes]
    ) -> None:
        """Adds the offsets found through pairs to `found`; the needles that must be searched
        with `re` instead to `literal`."""
        view = memoryview(buf)
        origin = lo - lo % 8  # the decoder's fast path reads aligned words
        budget = max(256, (hi - lo) >> 10)
        for start in (origin, origin + 1):
            # One decoded copy at a time: with two, the allocator gives their memory back to
            # the system after every region, and it is faulted in again for the next.
            if start == origin:
                units = _as_units(view[start:hi])
            else:
                units = self._odd_units(view, start, hi)
            if units is None:
                literal.update(self.needles)
                return
            for needle, (offset, unit) in self.pairs.items():
                if needle not in literal:
                    hits = _unit_hits(buf, lo, hi, needle, offset, unit, units, start, budget)
                    if hits is None:
                        literal.add(needle)
                    else:
                        found[needle] += hits
            del units

    def _odd_units(self, view: memoryview, start: int, hi: int) -> str | None:
        """view[start:hi] as units, copied to an aligned buffer first."""
        size = max(hi - start, 0)
        if len(self.odd) < size:
            self.odd = bytearray(size)
        odd = memoryview(self.odd)[:size]
        odd[:] = view[start:hi]  # one copy (assigning to the bytearray would make two)
        return _as_units(odd)

    def _literal_hits(self, buf: Chunk, needle: bytes, lo: int, hi: int) -> list[int]:
        if b"\n" in needle:  # `finditer` skips overlapping matches, which may start a line
            return find_all(buf, needle, lo, hi)
        return [match.start() for match in self.literal[needle].finditer(buf, lo, hi)]

    def _tune(self, buf: Chunk, lo: int, hi: int) -> dict[bytes, tuple[int, str]] | None:
        """Per needle to be searched through a pair: the pair searched fastest in buf[lo:hi]
        (its offset in the needle, and it as a unit). Left out: a needle without a usable pair,
        one that `re` finds faster, and all of them where decoding costs more than it saves.
        None where buf[lo:hi] cannot be decoded to units."""
        origin = lo - lo % 8
        view = memoryview(buf)[origin:hi]
        units = _as_units(view)
        if units is None:
            return None
        decode = _fastest(_as_units, view)
        spent = 2 * decode  # both alignments
        saved = 0.0
        pairs: dict[bytes, tuple[int, str]] = {}
        for needle in self.needles:
            literal = _fastest(self._literal_hits, buf, needle, lo, hi)
            best: tuple[float, int, str] | None = None
            for offset in range(len(needle) - 1):
                low, high = needle[offset], needle[offset + 1]
                if low == 0 or 0xD8 <= high <= 0xDF:  # memchr would look for NUL / a surrogate
                    continue
                unit = needle[offset : offset + 2].decode("utf-16-le")
                cost = 2 * _fastest(
                    _unit_hits, buf, lo, hi, needle, offset, unit, units, origin, hi
                )
                if best is None or cost < best[0]:
                    best = (cost, offset, unit)
            if best is not None and best[0] < literal:
                pairs[needle] = best[1:]
                spent += best[0]
                saved += literal
        return pairs if spent < saved else {}


_P = ParamSpec("_P")


def _fastest(search: Callable[_P, object], *args: _P.args, **kwargs: _P.kwargs) -> float:
    """The shorter of two timings of `search(*args)` (one may be interrupted)."""
    times = []
    for _ in range(2):
        started = time.perf_counter()
        search(*args, **kwargs)
        times.append(time.perf_counter() - started)
    return min(times)


def _as_units(view: memoryview) -> str | None:
    """The bytes as UTF-16-LE code units, one character per two bytes; None where they are not
    (a surrogate, which is an error or joins two units into one character)."""
    try:
        text, _ = codecs.utf_16_le_decode(view)
    except UnicodeDecodeError:
        return None
    return text if len(text) == len(view) // 2 else None


def _unit_hits(
    buf: Chunk,
    lo: int,
    hi: int,
    needle: bytes,
    offset: int,
    unit: str,
    units: str,
    origin: int,
    budget: int,
) -> list[int] | None:
    """Where in buf[lo:hi] the needle begins with its pair (needle[offset:offset + 2]) at one of
    the `units` (decoded from buf[origin:]); None once `budget` places were not the needle."""
    hits: list[int] = []
    find = units.find
    startswith = buf.startswith
    at = find(unit)
    while at >= 0:
        begin = origin + 2 * at - offset
        if begin >= lo and startswith(needle, begin, hi):
            hits.append(begin)
        else:
            budget -= 1
            if budget < 0:
                return None
        at = find(unit, at + 1)
    return hits


def find_all(buf: Chunk, needle: bytes, lo: int, hi: int) -> list[int]:
    hits: list[int] = []
    at = buf.find(needle, lo, hi)
    while at >= 0:
        hits.append(at)
        at = buf.find(needle, at + 1, hi)
    return hits
