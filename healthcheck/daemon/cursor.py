"""Pure: where the previous daemon run stopped reading the kernel log, and reading on from there.

Two kinds of cursor, chosen by the log's own lines:

- **kmsg**: raw `/dev/kmsg` records (``6,1234,5678901,-;msg``) carry a sequence number that
  grows by one per record within a boot. The cursor is ``{boot_id, seq, last_hash}``: the
  sequence number of the last record consumed and a hash of that record.
- **text**: logs without sequence numbers (`dmesg` text, `journalctl -k`, a log file, a
  replayed ``dmesg.txt``). The cursor is ``{boot_id, lines, last_hash}``: how many lines were
  consumed and a hash of the last one.

`filter_since` resumes after the cursor: records with a higher sequence number, lines after the
old end. It starts over, reading every line again, when the log is not the one the cursor was
taken on:

- the boot id changed (both known): a reboot restarts the kernel log;
- the log changed kind or source (`/dev/kmsg` became `dmesg` text, kern.log became dmesg);
- kmsg: the record at the cursor's sequence number has another hash, or the log holds records
  below the cursor but not the cursor's own, or ends before it (another boot, whose id was not
  known);
- text: the line at the old end has another hash and the last consumed line is nowhere earlier
  (a rotated or rewritten file). When it is found earlier (the head of a ring buffer was
  dropped, shifting every line up), reading resumes after it.

When the ring buffer dropped records past the cursor (the first record is already newer) every
record is new and reading goes on, with a note that some were lost.

Lines up to the cursor are held until the log proves to be the same one (so a log that turns
out to be another boot's can still be read from its start): memory is the size of the old part
of the log, bounded by the ring buffer for kmsg and dmesg.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from itertools import chain
from typing import Literal

from msgspec import Struct, field

from ..kernlog.lines import split_kernel_line

CursorKind = Literal["kmsg", "text"]
_HASH_CHARS = 16


class KernelCursor(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Where reading stopped: `seq` for a kmsg log, `lines` for a text log; never both."""

    boot_id: str | None = None
    source: str | None = None
    seq: int | None = None
    lines: int | None = None
    last_hash: str | None = None

    def __post_init__(self) -> None:
        if (self.seq is None) == (self.lines is None):
            raise ValueError("a kernel cursor has either `seq` (kmsg) or `lines` (text)")

    @property
    def kind(self) -> CursorKind:
        return "kmsg" if self.seq is not None else "text"

    def describe(self) -> str:
        where = f"record {self.seq}" if self.seq is not None else f"line {self.lines}"
        return f"{where} of {self.source or 'the kernel log'}"


class LogFollow(Struct):
    """What reading the log from a cursor did. Final once the lines are exhausted.

    `cursor` is the new cursor (None until the lines are exhausted, or when the log was
    empty); `complete` says every line was read, so the cursor may be saved.
    """

    previous: KernelCursor | None
    boot_id: str | None = None
    source: str | None = None
    cursor: KernelCursor | None = None
    complete: bool = False
    resumed: bool = False
    skipped: int = 0
    new_lines: int = 0
    reset: str | None = None
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line for the report: how the log was read."""
        if not self.complete:
            return "the kernel log was not read to its end; the cursor was not moved"
        if self.resumed:
            assert self.previous is not None
            text = (
                f"resumed after {self.previous.describe()}: {self.skipped} line(s) seen before, "
                f"{self.new_lines} new"
            )
        elif self.reset is not None:
            text = f"read from the start ({self.reset}): {self.new_lines} line(s)"
        else:
            text = f"read from the start (no cursor yet): {self.new_lines} line(s)"
        return "; ".join([text, *self.notes])


def line_hash(raw: str) -> str:
    """The short hash a cursor keeps of the last line it consumed."""
    text = raw.rstrip("\r\n")
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]


def kmsg_seq(raw: str) -> int | None:
    """The sequence number of a raw /dev/kmsg record line; None for any other line."""
    if not raw[:1].isdigit():
        return None
    comma = raw.find(",", 0, 6)
    if comma < 0 or ";" not in raw:
        return None
    record = split_kernel_line(raw)
    return record.seq if record is not None else None


def filter_since(
    lines: Iterable[str],
    cursor: KernelCursor | None,
    boot_id: str | None = None,
    source: str | None = None,
) -> tuple[Iterator[str], LogFollow]:
    """The lines after `cursor` (all of them when it does not apply), and what was done.

    `boot_id` is the current boot's (/proc/sys/kernel/random/boot_id, or a bundle's
    meta.json), `source` where the lines come from (the stream's ref); either may be None.
    The returned `LogFollow` is filled in as the lines are consumed: its `cursor` is the one
    to save once they are exhausted.
    """
    follow = LogFollow(previous=cursor, boot_id=boot_id, source=source)
    return _follow(lines, follow), follow


def _follow(lines: Iterable[str], follow: LogFollow) -> Iterator[str]:
    stream = iter(lines)
    head: list[str] = []
    first: str | None = None
    for raw in stream:  # the first line that starts a message tells the log's kind
        head.append(raw)
        if raw.strip() and not raw[0].isspace():
            first = raw
            break
    kind: CursorKind = "kmsg" if first is not None and kmsg_seq(first) is not None else "text"
    tracker = _Tracker(kind)
    everything = tracker.watch(chain(head, stream))
    previous = follow.previous
    reason = _start_over_reason(previous, kind, follow.boot_id, follow.source)
    if previous is None or reason is not None:
        follow.reset = reason
        for raw in everything:
            follow.new_lines += 1
            yield raw
    elif kind == "kmsg":
        yield from _resume_kmsg(everything, previous, follow)
    else:
        yield from _resume_text(everything, previous, follow)
    follow.cursor = tracker.cursor(follow.boot_id, follow.source)
    follow.complete = True


def _start_over_reason(
    previous: KernelCursor | None, kind: CursorKind, boot_id: str | None, source: str | None
) -> str | None:
    if previous is None:
        return None
    if previous.boot_id and boot_id and previous.boot_id != boot_id:
        return "new boot: the boot id changed"
    if previous.kind != kind:
        return f"the kernel log changed kind ({previous.kind} → {kind})"
    if previous.source and source and previous.source != source:
        return f"the kernel log changed source ({previous.source} → {source})"
    return None


class _Tracker:
    """Follows every line read to know the new cursor's position and hash.

    kmsg: only the last line that may be a record is kept and parsed at the end (records
    start with a digit, continuation lines with a space), so following costs no parsing.
    """

    def __init__(self, kind: CursorKind) -> None:
        self.kind = kind
        self.count = 0
        self.last: str | None = None

    def watch(self, lines: Iterator[str]) -> Iterator[str]:
        if self.kind == "kmsg":
            for raw in lines:
                if raw[:1].isdigit():
                    self.last = raw
                yield raw
            return
        for raw in lines:
            self.count += 1
            self.last = raw
            yield raw

    def cursor(self, boot_id: str | None, source: str | None) -> KernelCursor | None:
        if self.last is None:
            return None
        last_hash = line_hash(self.last)
        if self.kind == "kmsg":
            seq = kmsg_seq(self.last)
            if seq is None:  # the log ends in a line that is no record: start over next time
                return None
            return KernelCursor(boot_id=boot_id, source=source, seq=seq, last_hash=last_hash)
        return KernelCursor(boot_id=boot_id, source=source, lines=self.count, last_hash=last_hash)


def _resume_kmsg(lines: Iterator[str], previous: KernelCursor, follow: LogFollow) -> Iterator[str]:
    assert previous.seq is not None
    target = previous.seq
    held: list[str] = []  # records below the cursor, kept until the log proves to be the same
    held_records = 0
    for raw in lines:
        seq = kmsg_seq(raw)
        if seq is None:  # a continuation (dictionary) line of the record before it
            held.append(raw)
            continue
        if seq < target:
            held.append(raw)
            held_records += 1
            continue
        if seq == target:
            if previous.last_hash is None or line_hash(raw) == previous.last_hash:
                follow.resumed = True
                follow.skipped = len(held) + 1
                yield from _after_record(lines, follow)
                return
            follow.reset = f"the record at sequence number {target} differs: another boot's log"
        elif held_records:
            follow.reset = f"record {target} is missing between older and newer ones: another boot"
        else:  # the ring buffer starts after the cursor: every record here is new
            follow.resumed = True
            follow.skipped = len(held)
            if seq > target + 1:
                follow.notes.append(
                    f"records {target + 1}..{seq - 1} were overwritten in the ring buffer "
                    "before this run could read them"
                )
            held = []
        yield from _count(follow, chain(held, [raw], lines))
        return
    if held_records:
        follow.reset = f"the log ends before record {target}: another boot's log"
        yield from _count(follow, held)
        return
    follow.resumed = True
    follow.skipped = len(held)


def _after_record(lines: Iterator[str], follow: LogFollow) -> Iterator[str]:
    """After the cursor's record: skip its continuation lines, then yield everything."""
    for raw in lines:
        if kmsg_seq(raw) is None:
            follow.skipped += 1
            continue
        yield from _count(follow, chain([raw], lines))
        return


def _resume_text(lines: Iterator[str], previous: KernelCursor, follow: LogFollow) -> Iterator[str]:
    assert previous.lines is not None
    target = previous.lines
    held: list[str] = []  # lines up to the old end, kept until the log proves to be the same
    if target > 0:
        for raw in lines:
            held.append(raw)
            if len(held) == target:
                break
    if len(held) == target and (
        target == 0 or previous.last_hash is None or line_hash(held[-1]) == previous.last_hash
    ):
        follow.resumed = True
        follow.skipped = target
        yield from _count(follow, lines)
        return
    # the old end is not where it was: look for the last consumed line earlier in the log
    found = _last_index(held, previous.last_hash)
    if found is not None:
        follow.resumed = True
        follow.skipped = found + 1
        follow.notes.append(
            f"the log's head was dropped: the last line read before is now line {found + 1}, "
            f"not {target}"
        )
        yield from _count(follow, chain(held[found + 1 :], lines))
        return
    follow.reset = "the log was rotated or rewritten: its old end is gone"
    yield from _count(follow, chain(held, lines))


def _last_index(held: list[str], wanted: str | None) -> int | None:
    if wanted is None:
        return None
    for index in range(len(held) - 1, -1, -1):
        if line_hash(held[index]) == wanted:
            return index
    return None


def _count(follow: LogFollow, lines: Iterable[str]) -> Iterator[str]:
    for raw in lines:
        follow.new_lines += 1
        yield raw
