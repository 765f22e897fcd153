"""Every offset where one of a few byte strings begins in a large buffer, found in C.

Used by the kernel-log pre-filter (`chunks`) to find its anchors' needles in each chunk of a
log: a log of a gigabyte with few matches must cost little more than reading it (issues 10, 19).

Where `ahocorasick_rs` is installed (Rust's aho-corasick: every needle in one pass, with a SIMD
prefilter), it finds the lines that hold a needle and then every offset in them; else each
needle is found through a probe of its own (`NeedleFinder`'s plan). Both give the same offsets.
"""

from __future__ import annotations

import codecs
import re
import time
from collections.abc import Callable, Iterable
from typing import ParamSpec, TypeAlias, TypeVar

from msgspec import Struct

try:
    from ahocorasick_rs import BytesAhoCorasick, MatchKind
except ImportError:  # no wheel for this platform or Python: the probes
    AUTOMATON = False
else:
    AUTOMATON = True

Chunk: TypeAlias = bytes | bytearray

# A region this long or longer is searched by `NeedleFinder`'s plan; a shorter one with
# `bytes.find`.
BULK_BYTES = 64 * 1024
_SAMPLE_BYTES = 64 * 1024  # how much of the log the ways of searching are timed on
_RETUNE_BYTES = 256 * 1024 * 1024  # and how often they are timed again
_RETUNE_AFTER_MISS = 16 * 1024 * 1024  # or sooner, after a probe ran over its budget
_SPAN_GAP = 4096  # lines with needles this close are searched for all of them at once

Member: TypeAlias = tuple[bytes, int]  # a needle, and where in it its probe is


class Probe(Struct, frozen=True):
    """One search that finds some needles: `key` is a byte (found with memchr in the buffer)
    or a unit, two bytes as one UTF-16-LE character (found in the buffer decoded at both
    alignments); each member needle is compared wherever the key is found, at its offset."""

    key: bytes | str
    members: tuple[Member, ...]

    @property
    def needles(self) -> tuple[bytes, ...]:
        return tuple(needle for needle, _ in self.members)


class Plan(Struct, frozen=True):
    """How each needle is searched: through a byte probe, a unit probe, or as a literal
    (`re`); every needle in exactly one of them."""

    bytes_: tuple[Probe, ...] = ()
    units: tuple[Probe, ...] = ()
    literal: tuple[bytes, ...] = ()


class NeedleFinder:
    """Every offset in buf[lo:hi] where a needle begins, per needle, in order.

    A needle is found through one of its bytes or one of its pairs of bytes (a probe, which
    several needles may share), and compared in full only where that is found:

    - a byte: `bytes.find` of one byte is memchr; each place it stops reaches Python, so this
      is for a byte the log hardly holds (most letters of an ASCII needle in a log that is not
      in English, whose other bytes are all 80-FF).
    - a pair: decoded as UTF-16-LE, once from an even and once from an odd offset, the region
      is two strings of 16-bit units in which any two adjacent bytes of the region are one
      character of one of them. CPython finds a one-character substring of such a string with
      memchr on the character's low byte and compares the whole unit in C, so only the places
      where the pair occurs reach Python. Decoding costs a copy of the region (several times
      more where it is not ASCII), and memchr stops, in C, at every occurrence of the low byte.
    - a literal: `re` (a literal's bytes compared in a tight C loop at every offset).

    Which way, for which needle, through which byte or pair, is timed on a sample of the log
    (`_tune`) and chosen for the least time in all (`_cover`). A probe that stops too often
    where its needles are not (a budget per region), or a region the decoder does not map
    one unit to two bytes (a UTF-16 surrogate: a byte D8-DF at that offset), falls back to
    `re` for that region. Every way gives the same offsets.
    """

    def __init__(self, needles: Iterable[bytes], *, automaton: bool | None = None) -> None:
        self.needles = tuple(dict.fromkeys(needles))
        # Lines are what the automaton's first pass finds, so a needle must not span two.
        use = AUTOMATON if automaton is None else automaton
        self.automata: tuple[BytesAhoCorasick, BytesAhoCorasick] | None = None
        if use and self.needles and not any(b"\n" in needle for needle in self.needles):
            patterns = list(self.needles)
            self.automata = (
                BytesAhoCorasick(patterns, matchkind=MatchKind.LeftmostFirst),
                BytesAhoCorasick(patterns, matchkind=MatchKind.Standard),
            )
        # the needles (by index) a match of which may hide where another one begins
        self.hiding = frozenset(
            index
            for index, needle in enumerate(self.needles)
            if any(_may_hide(needle, other) for other in self.needles)
        )
        self.literal = {needle: re.compile(re.escape(needle)) for needle in self.needles}
        self.overlapping = {needle for needle in self.needles if _self_overlapping(needle)}
        self.plan = Plan(literal=self.needles)
        self.until_tune = 0
        self.odd = bytearray()

    def find(self, buf: Chunk, lo: int, hi: int) -> dict[bytes, list[int]]:
        hi = min(hi, len(buf))
        if self.automata is not None:
            return self._find_lines(buf, lo, hi, *self.automata)
        if hi - lo < BULK_BYTES:
            return {needle: find_all(buf, needle, lo, hi) for needle in self.needles}
        if self.until_tune <= 0:
            self.plan = self._tune(buf, lo, min(hi, lo + _SAMPLE_BYTES))
            self.until_tune = _RETUNE_BYTES
        self.until_tune -= hi - lo
        plan = self.plan
        found: dict[bytes, list[int]] = {}
        literal = list(plan.literal)
        budget = _byte_budget(lo, hi)
        for probe in plan.bytes_:
            hits = _byte_hits(buf, lo, hi, probe, budget)
            if hits is None:
                literal += probe.needles
                self.until_tune = min(self.until_tune, _RETUNE_AFTER_MISS)
            else:
                found.update(hits)
        if plan.units:
            missed = self._find_units(buf, lo, hi, plan.units, found)
            if missed:
                literal += missed
                self.until_tune = min(self.until_tune, _RETUNE_AFTER_MISS)
        for needle in literal:
            found[needle] = self._literal_hits(buf, needle, lo, hi)
        return found

    def line_hits(self, buf: Chunk, lo: int, hi: int) -> list[int]:
        """Offsets in buf[lo:hi], in order, each where a needle begins, such that every line
        there that holds a needle holds one of them: through the automaton, its leftmost
        matches (a line holding a needle holds the start of one, as no needle holds a line
        break); else every offset `find` gives."""
        if self.automata is None:
            found = self.find(buf, lo, hi)
            return sorted(at for hits in found.values() for at in hits)
        if hi <= lo:
            return []
        with memoryview(buf) as view, view[lo:hi] as region:
            matches = self.automata[0].find_matches_as_indexes(region)
        return [lo + start for _, start, _ in matches]

    def _find_lines(
        self, buf: Chunk, lo: int, hi: int, first: BytesAhoCorasick, every: BytesAhoCorasick
    ) -> dict[bytes, list[int]]:
        """Through the automata: the leftmost match of each run of needles (no two overlap),
        then, after a match of a needle that may hide another (`_may_hide`), every match from
        there to the end of its line. Nothing begins between one leftmost match's end and the
        next's start, a needle that begins inside a match begins on that match's line (no
        needle holds a line break), and none begins inside a match of a needle that hides
        none."""
        found: dict[bytes, list[int]] = {needle: [] for needle in self.needles}
        if hi <= lo:
            return found
        needles, hiding = self.needles, self.hiding
        with memoryview(buf) as view:
            with view[lo:hi] as region:
                matches = first.find_matches_as_indexes(region)
            spans: list[list[int]] = []
            direct: list[tuple[int, int]] = []  # (offset, needle) of the matches that hide none
            for index, start, _ in matches:
                at = lo + start
                if spans and at < spans[-1][1]:
                    continue  # on a line already taken
                if index not in hiding:
                    direct.append((at, index))
                    continue
                end = buf.find(b"\n", at, hi)
                line_end = hi if end < 0 else end + 1
                if spans and at - spans[-1][1] <= _SPAN_GAP:
                    spans[-1][1] = line_end
                else:
                    spans.append([at, line_end])
            for begin, end in spans:
                with view[begin:end] as span:
                    for index, start, _ in every.find_matches_as_indexes(span, overlapping=True):
                        found[needles[index]].append(begin + start)
        if direct:
            _add_outside(found, needles, direct, spans)
        return found

    def _find_units(
        self, buf: Chunk, lo: int, hi: int, probes: tuple[Probe, ...], found: dict[bytes, list[int]]
    ) -> list[bytes]:
        """Adds the offsets found through unit probes to `found`; returns the needles that
        must be searched with `re` instead."""
        origin = lo - lo % 8  # the decoder's fast path reads aligned words
        budget = _unit_budget(lo, hi)
        hits: dict[bytes, list[int]] = {needle: [] for probe in probes for needle in probe.needles}
        live = list(probes)
        missed: list[bytes] = []
        with memoryview(buf) as view:
            for start in (origin, origin + 1):
                # One decoded copy at a time: with two, the allocator gives their memory back
                # to the system after every region, and it is faulted in again for the next.
                if start == origin:
                    units = _as_units(view[start:hi])
                else:
                    units = self._odd_units(view, start, hi)
                if units is None:
                    return [needle for probe in probes for needle in probe.needles]
                for probe in tuple(live):
                    got = _unit_hits(buf, lo, hi, probe, units, start, budget)
                    if got is None:
                        live.remove(probe)
                        missed += probe.needles
                    else:
                        for needle, offsets in got.items():
                            hits[needle] += offsets
                del units
        for probe in live:
            for needle in probe.needles:
                found[needle] = sorted(hits[needle])
        return missed

    def _odd_units(self, view: memoryview, start: int, hi: int) -> str | None:
        """view[start:hi] as units, copied to an aligned buffer first."""
        size = max(hi - start, 0)
        if len(self.odd) < size:
            self.odd = bytearray(size)
        with memoryview(self.odd) as whole, whole[:size] as odd:
            odd[:] = view[start:hi]  # one copy (assigning to the bytearray would make two)
            return _as_units(odd)

    def _literal_hits(self, buf: Chunk, needle: bytes, lo: int, hi: int) -> list[int]:
        if needle in self.overlapping:  # `finditer` skips overlapping matches
            return find_all(buf, needle, lo, hi)
        return [match.start() for match in self.literal[needle].finditer(buf, lo, hi)]

    def _tune(self, buf: Chunk, lo: int, hi: int) -> Plan:
        """The plan that searched buf[lo:hi] fastest: each way of searching each needle timed
        there, then the cheapest cover of all needles, with and without decoding."""
        literal = {
            needle: _fastest(self._literal_hits, buf, needle, lo, hi)[0] for needle in self.needles
        }
        budget = _byte_budget(lo, hi)
        by_byte: list[tuple[float, Probe]] = []
        for probe in _byte_probes(self.needles):
            cost, hits = _fastest(_byte_hits, buf, lo, hi, probe, budget)
            if hits is not None:
                by_byte.append((cost, probe))
        plain = _cover(self.needles, literal, by_byte, [])
        decoded = self._decoded_sample(buf, lo, hi)
        if decoded is None:
            return plain[1]
        decode, strings = decoded
        budget = _unit_budget(lo, hi)
        by_unit: list[tuple[float, Probe]] = []
        for probe in _unit_probes(self.needles):
            cost = 0.0
            for start, units in strings:
                seconds, hits = _fastest(_unit_hits, buf, lo, hi, probe, units, start, budget)
                if hits is None:
                    break
                cost += seconds
            else:
                by_unit.append((cost, probe))
        both = _cover(self.needles, literal, by_byte, by_unit)
        return both[1] if both[1].units and decode + both[0] < plain[0] else plain[1]

    def _decoded_sample(
        self, buf: Chunk, lo: int, hi: int
    ) -> tuple[float, list[tuple[int, str]]] | None:
        """What decoding buf[lo:hi] at both alignments costs, and the two strings (each with
        the offset it starts at); None where it cannot be decoded to units."""
        origin = lo - lo % 8
        with memoryview(buf) as view:
            even, odd = _as_units(view[origin:hi]), self._odd_units(view, origin + 1, hi)
            if even is None or odd is None:
                return None
            cost = _fastest(_as_units, view[origin:hi])[0]
            cost += _fastest(self._odd_units, view, origin + 1, hi)[0]
        return cost, [(origin, even), (origin + 1, odd)]


def _cover(
    needles: tuple[bytes, ...],
    literal: dict[bytes, float],
    by_byte: list[tuple[float, Probe]],
    by_unit: list[tuple[float, Probe]],
) -> tuple[float, Plan]:
    """The cheapest plan found greedily: the way that costs least per needle it adds, until
    every needle has one (a literal is always a way)."""
    ways: list[tuple[float, str, Probe]] = [
        (cost, "literal", Probe(b"", ((needle, 0),))) for needle, cost in literal.items()
    ]
    ways += [(cost, "byte", probe) for cost, probe in by_byte]
    ways += [(cost, "unit", probe) for cost, probe in by_unit]
    left = set(needles)
    total = 0.0
    chosen: dict[str, list[Probe]] = {"literal": [], "byte": [], "unit": []}
    while left:
        cost, kind, probe = min(
            (way for way in ways if left.intersection(way[2].needles)),
            key=lambda way: way[0] / len(left.intersection(way[2].needles)),
        )
        members = tuple(member for member in probe.members if member[0] in left)
        chosen[kind].append(Probe(probe.key, members))
        left.difference_update(probe.needles)
        total += cost
    return total, Plan(
        bytes_=tuple(chosen["byte"]),
        units=tuple(chosen["unit"]),
        literal=tuple(needle for probe in chosen["literal"] for needle in probe.needles),
    )


def _byte_probes(needles: tuple[bytes, ...]) -> list[Probe]:
    """One probe per byte that some needle holds, with every needle that holds it."""
    keys = dict.fromkeys(byte for needle in needles for byte in needle)
    return [
        Probe(bytes([key]), tuple((n, n.index(key)) for n in needles if key in n)) for key in keys
    ]


def _unit_probes(needles: tuple[bytes, ...]) -> list[Probe]:
    """One probe per pair of adjacent bytes that some needle holds and memchr can search for
    (a low byte other than NUL, a high byte that makes no surrogate), with every needle that
    holds it."""
    pairs = dict.fromkeys(
        needle[at : at + 2]
        for needle in needles
        for at in range(len(needle) - 1)
        if needle[at] != 0 and not 0xD8 <= needle[at + 1] <= 0xDF
    )
    return [
        Probe(pair.decode("utf-16-le"), tuple((n, n.find(pair)) for n in needles if pair in n))
        for pair in pairs
    ]


def _byte_budget(lo: int, hi: int) -> int:
    """How many places a byte probe may stop at in vain: about where `re` would be faster."""
    return max(64, (hi - lo) >> 9)


def _unit_budget(lo: int, hi: int) -> int:
    return max(256, (hi - lo) >> 10)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _fastest(search: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> tuple[float, _R]:
    """The shorter of two timings of `search(*args)` (one may be interrupted), and what it
    returned."""
    times = []
    for _ in range(2):
        started = time.perf_counter()
        result = search(*args, **kwargs)
        times.append(time.perf_counter() - started)
    return min(times), result


def _as_units(view: memoryview) -> str | None:
    """The bytes as UTF-16-LE code units, one character per two bytes; None where they are not
    (a surrogate, which is an error or joins two units into one character)."""
    try:
        text, _ = codecs.utf_16_le_decode(view)
    except UnicodeDecodeError:
        return None
    return text if len(text) == len(view) // 2 else None


def _byte_hits(
    buf: Chunk, lo: int, hi: int, probe: Probe, budget: int
) -> dict[bytes, list[int]] | None:
    """Where in buf[lo:hi] each member needle begins with its byte at a place where the
    probe's byte is; None once `budget` places held none of them."""
    find = buf.find
    startswith = buf.startswith
    key = probe.key
    assert isinstance(key, bytes)
    if len(probe.members) == 1:
        ((needle, offset),) = probe.members
        hits: list[int] = []
        at = find(key, lo + offset, hi)
        while at >= 0:
            if startswith(needle, at - offset, hi):
                hits.append(at - offset)
            else:
                budget -= 1
                if budget < 0:
                    return None
            at = find(key, at + 1, hi)
        return {needle: hits}
    found: dict[bytes, list[int]] = {needle: [] for needle in probe.needles}
    at = find(key, lo + min(offset for _, offset in probe.members), hi)
    while at >= 0:
        if not _compare(buf, lo, hi, probe.members, at, found):
            budget -= 1
            if budget < 0:
                return None
        at = find(key, at + 1, hi)
    return found


def _compare(
    buf: Chunk,
    lo: int,
    hi: int,
    members: tuple[Member, ...],
    at: int,
    found: dict[bytes, list[int]],
) -> bool:
    """Adds to `found` each member needle that begins where its probe would be at `at`;
    whether one did."""
    matched = False
    for needle, offset in members:
        begin = at - offset
        if begin >= lo and buf.startswith(needle, begin, hi):
            found[needle].append(begin)
            matched = True
    return matched


def _unit_hits(
    buf: Chunk,
    lo: int,
    hi: int,
    probe: Probe,
    units: str,
    origin: int,
    budget: int,
) -> dict[bytes, list[int]] | None:
    """Where in buf[lo:hi] each member needle begins with its pair at one of the `units`
    (decoded from buf[origin:]) that is the probe's; None once `budget` places were none."""
    key = probe.key
    assert isinstance(key, str)
    find = units.find
    if len(probe.members) == 1:
        startswith = buf.startswith
        ((needle, offset),) = probe.members
        hits: list[int] = []
        at = find(key)
        while at >= 0:
            begin = origin + 2 * at - offset
            if begin >= lo and startswith(needle, begin, hi):
                hits.append(begin)
            else:
                budget -= 1
                if budget < 0:
                    return None
            at = find(key, at + 1)
        return {needle: hits}
    found: dict[bytes, list[int]] = {needle: [] for needle in probe.needles}
    at = find(key)
    while at >= 0:
        if not _compare(buf, lo, hi, probe.members, origin + 2 * at, found):
            budget -= 1
            if budget < 0:
                return None
        at = find(key, at + 1)
    return found


def _may_hide(needle: bytes, other: bytes) -> bool:
    """Whether `other` may begin inside a match of `needle` (at its start, as a needle listed
    later, or after): an end of `needle` is a start of `other`, or holds it."""
    for at in range(len(needle)):
        rest = needle[at:]
        if (at or other is not needle) and (other.startswith(rest) or rest.startswith(other)):
            return True
    return False


def _add_outside(
    found: dict[bytes, list[int]],
    needles: tuple[bytes, ...],
    direct: list[tuple[int, int]],
    spans: list[list[int]],
) -> None:
    """Adds each (offset, needle index) not inside a span (whose matches are all in `found`
    already), keeping every needle's offsets in order."""
    touched: set[bytes] = set()
    index = 0
    for at, which in direct:
        while index < len(spans) and spans[index][1] <= at:
            index += 1
        if index < len(spans) and spans[index][0] <= at:
            continue
        needle = needles[which]
        found[needle].append(at)
        touched.add(needle)
    if spans:
        for needle in touched:
            found[needle].sort()


def _self_overlapping(needle: bytes) -> bool:
    """Whether two occurrences of the needle can overlap (an end of it is also its start)."""
    return any(needle.endswith(needle[:size]) for size in range(1, len(needle)))


def count_line_hits(needles: Iterable[bytes], samples: Iterable[bytes]) -> int:
    """How many offsets `NeedleFinder.line_hits` gives over each of `samples`, summed: through
    one automaton (built once, no Python per hit) where `ahocorasick_rs` is installed, else
    through a `NeedleFinder`."""
    unique = list(dict.fromkeys(needles))
    if AUTOMATON and unique and not any(b"\n" in needle for needle in unique):
        automaton = BytesAhoCorasick(unique, matchkind=MatchKind.LeftmostFirst)
        return sum(len(automaton.find_matches_as_indexes(sample)) for sample in samples)
    finder = NeedleFinder(unique)
    return sum(len(finder.line_hits(sample, 0, len(sample))) for sample in samples)


def find_all(buf: Chunk, needle: bytes, lo: int, hi: int) -> list[int]:
    hits: list[int] = []
    at = buf.find(needle, lo, hi)
    while at >= 0:
        hits.append(at)
        at = buf.find(needle, at + 1, hi)
    return hits
