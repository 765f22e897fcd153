"""Split raw kernel-log lines into their message and the prefixes tools put in front of it.

Pure: no I/O, no global state beyond compiled patterns. Every form a kernel message reaches a
node's logs in is accepted and reduced to the message the kernel printed (`body`), the
timestamp text as the tool gave it (`time`), the /dev/kmsg sequence number (`seq`) and the
printk caller id (`caller`):

- plain `dmesg`            ``[  123.456789] msg``
- `dmesg -T`               ``[Mon Aug  5 03:54:13 2024] msg`` (any locale's day/month names)
- `dmesg -H`               ``[Aug30 11:11] msg`` and ``[  +0.000316] msg``
- `dmesg -x`               ``kern  :err   : [  123.456789] msg``
- `dmesg --time-format=iso` ``2024-08-30T11:43:09,123456+00:00 msg``
- printk caller ids        ``[  T291]`` / ``[C3]`` before or after the timestamp
- syslog / journald        ``Sep 19 16:18:02 host kernel: [68183.615790] msg`` (hostname
  optional, ISO-8601 timestamps, non-English month names, `kernel[0]:` tags)
- journald monotonic       ``[  123.456789] host kernel: msg``
- bare tag                 ``kernel: msg``
- console level            ``<4>[  123.456789] msg``
- raw /dev/kmsg records    ``6,1234,5678901,-;msg`` / ``6,1234,5678901,-,caller=T12;msg``,
  whose ``\\x0a``-escaped lines are split and whose ` KEY=value` dictionary lines are dropped.

`time` is the kernel's own (innermost) timestamp, else the syslog one; a /dev/kmsg record's
microseconds read as `dmesg` prints them ("512.100200"). A line a fixed-width wrap broke
(``... type=Physical La`` / ``yer, id=00e0(Receiver ID)``, a log pasted from a mail) is one
line (facts.md, "aer"): `unwrap_lines` joins each continuation to the line above, as it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from msgspec import Struct


class KernelLine(Struct, frozen=True):
    """One kernel message line with every log-tool prefix stripped."""

    body: str
    time: str | None = None
    seq: int | None = None
    caller: str | None = None


# /dev/kmsg: "<prio>,<seq>,<usec>,<flags>[,caller=T12][,more];message"
_KMSG = re.compile(r"(\d{1,4}),(\d+),(\d+),[^;,]*((?:,[^;,]*)*);")
_KMSG_CALLER = re.compile(r"caller=([TC]\d+)")
# a /dev/kmsg dictionary continuation line: " SUBSYSTEM=pci", " DEVICE=+pci:0000:01:00.0"
_KMSG_DICT = re.compile(r" [A-Z][A-Z0-9_]*=")

_LETTERS = r"[^\W\d_]+\.?"  # a month/day name in any language ("Sep", "фев", "Mai", "févr.")
_CLOCK = r"\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"
_ISO = r"\d{4}-\d{2}-\d{2}[T ]" + _CLOCK + r"(?:Z|[+-]\d{2}:?\d{2})?"
_TAG = r"(?:(?P<host>\S+)\s+)?kernel(?:\[\d+\])?:(?: |$)"

# "Sep 19 16:18:02[.123456] [host] kernel: "  (journalctl short/short-precise, rsyslog)
_SYSLOG = re.compile(r"(?P<ts>" + _LETTERS + r"\s+\d{1,2}\s+" + _CLOCK + r")\s+" + _TAG)
# "Thu 2024-09-19 16:18:02 CEST [host] kernel: "  (journalctl -o short-full)
_SYSLOG_FULL = re.compile(
    r"(?P<ts>" + _LETTERS + r"\s+\d{4}-\d{2}-\d{2}\s+" + _CLOCK + r"(?:\s+[A-Z]{2,5})?)\s+" + _TAG
)
# ISO-8601 stamp, then either "[host] kernel: " (rsyslog/journalctl -o short-iso) or the message
_ISO_STAMP = re.compile(r"(?P<ts>" + _ISO + r")(?: |$)")
_HOST_TAG = re.compile(_TAG)
# dmesg -x: "kern  :err   : "
_FACILITY_NAME = (
    r"(?:kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|res\d|local[0-7])"
)
_FACILITY = re.compile(
    _FACILITY_NAME + r"\s*:(?:emerg|alert|crit|err|warn|notice|info|debug)\s*:(?: |$)"
)
# contents of a [...] group that is a timestamp rather than part of the message
_BRACKET_TIME = re.compile(
    r"\s*\+?\d+(?:[.,]\d+)?\s*"  # [  123.456789]  [  +0.000316]
    r"|\s*" + _LETTERS + r"\s+" + _LETTERS + r"\s+\d{1,2}\s+" + _CLOCK + r"\s+\d{4}\s*"  # -T
    r"|\s*" + _LETTERS + r"\s*\d{1,2}\s+\d{1,2}:\d{2}(?::\d{2})?\s*"  # -H "[Aug30 11:11]"
    r"|\s*" + _ISO + r"\s*"
)
_BRACKET_CALLER = re.compile(r"\s*([TC]\d+)\s*")
_LEVEL = re.compile(r"<\d{1,3}>")

# Matches at the start of every text `_after_kernel_stamp` or `_strip_one` would strip more
# from (and of some they would not): where it does not match, the text after a stamp is the body.
_MAYBE_PREFIX = (
    r"[\[<]"  # a bracket group, a console level
    r"|\d{4}-"  # an ISO-8601 stamp
    r"|kernel:"
    r"|" + _FACILITY_NAME + r"\s*:"  # dmesg -x
    # a journald monotonic "host kernel: ", syslog "Sep 19 16:", journalctl -o short-full (the
    # first word and blanks taken whole, as `(?=(?P<x>...))(?P=x)` does: no backtracking)
    r"|(?=(?P<word>\S+\s+))(?P=word)(?:kernel|\d{1,2}\s+\d{1,2}:|\d{4}-)"
)
# A message that begins with a device's name and bus id ("nvidia 0000:98:00.0: ..."), which
# `_MAYBE_PREFIX` never matches: told at less cost than by trying that.
_DEVICE_MESSAGE = r"[a-z][a-z0-9_.-]* [0-9a-f]{4,5}:"
# The fast path for the line nearly every log has: the plain `dmesg` stamp "[  123.456789] "
# (also "[  +0.000316] ") and the message (`body`), no other prefix; else (`other`) a line to
# split by `split_kernel_line`. Matched against lines joined by line breaks, each line whole
# (where a lookahead reads on into the next line, the line goes to `other`: same result). The
# "]" is kept within the first 64 characters, where `_strip_bracket` looks for it; its one
# separator space, if there is one, is taken whole before what follows is tried.
_PLAIN_LINES = re.compile(
    r"^(?:\[ {0,24}(?P<time>\+?[0-9]{1,24}\.[0-9]{1,12})\](?=(?P<sep> ?))(?P=sep)"
    r"(?:(?=" + _DEVICE_MESSAGE + r")|(?!" + _MAYBE_PREFIX + r"))"
    r"(?P<body>.*)|(?P<other>.*))$",
    re.MULTILINE,
)

_MAX_PREFIXES = 8  # a line never legitimately stacks more prefixes than this


def split_kernel_line(raw: str) -> KernelLine | None:
    """Split one raw line; None for a line that carries no message (kmsg dictionary lines)."""
    line = raw.rstrip("\r\n")
    if not line:
        return KernelLine(body="")
    first = line[0]
    if first.isdigit():
        record = _split_kmsg(line)
        if record is not None:
            return record
    elif first == " " or first == "\t":
        if _KMSG_DICT.match(line):
            return None
        line = line.lstrip()
    return _split_prefixed(line)


def iter_kernel_lines(lines: Iterable[str]) -> Iterator[KernelLine]:
    """Stream `KernelLine`s from raw lines: newlines and NUL bytes stripped, garbage tolerated."""
    for raw in lines:
        if "\x00" in raw:
            raw = raw.replace("\x00", "")
        record = split_kernel_line(raw.rstrip("\r\n"))
        if record is None:
            continue
        if record.seq is not None and "\\x0a" in record.body:
            yield from _split_escaped_newlines(record)
        else:
            yield record


def kernel_messages(lines: list[str]) -> list[tuple[str, str | None]]:
    """Each message of `iter_kernel_lines(lines)` and its time (`body`, `time`): the lines with
    just the plain `dmesg` stamp split by one pass over them all (`_PLAIN_LINES`), the others
    (and all where one holds a carriage return or a NUL byte) one at a time."""
    text = "\n".join(lines)
    if not lines or "\r" in text or "\x00" in text:
        return [(line.body, line.time) for line in iter_kernel_lines(lines)]
    messages: list[tuple[str, str | None]] = []
    for time, _, _, body, other in _PLAIN_LINES.findall(text):
        if time:
            messages.append((body, time))
        else:
            messages.extend((line.body, line.time) for line in iter_kernel_lines((other,)))
    return messages


# A line of its own (`continues`) begins with a bracket, a console level or a firmware record's
# "{1}", or carries a label ("NVRM: ", "pcieport 0000:00:1c.0: ", "host kernel: ").
_OWN_FIRST = "[<{"
LABEL = ": "
# A line that begins like a sentence ("Disabling lock debugging due to kernel taint").
_SENTENCE = re.compile(r"[A-Z][a-z]")
# A call-trace line ("show_stack+0x52/0x5c", "? __die+0x24/0x80 [nvidia]"): always its own.
_CALL_TRACE = re.compile(r"(?:\? )?[\w.$]+\+0x[0-9a-f]+/0x[0-9a-f]+")
# A joined line is never longer (kernel lines are under 1 KiB): a log of short lines that each
# look like the rest of the one above costs no memory or time growing with its size.
MAX_JOINED = 4096


def continues(above: str, line: str) -> bool:
    """Whether `line` is the rest of the line `above` it, broken by a fixed-width wrap: it
    carries no timestamp, prefix, label (a colon and a blank) or bracket of its own, is no
    call-trace line (`show_stack+0x52/0x5c`), holds a word and does not end with a colon.
    Below a line with no timestamp, an indented line or a sentence is a line of its own too;
    below a timestamped one it is that record's (a wrap at a blank leaves the blank)."""
    line = line.rstrip("\r\n")
    text = line.lstrip()
    if not text or text[0] in _OWN_FIRST or LABEL in text or _CALL_TRACE.match(text):
        return False
    word = text.rstrip()
    if word.endswith(":") or not any(map(str.isalnum, word)) or not above.strip():
        return False
    own = split_kernel_line(line)
    if own is None or own.body != text:
        return False  # a log tool's prefix (or a /dev/kmsg record's dictionary line)
    if line[0].isspace() or _SENTENCE.match(text):
        stamped = split_kernel_line(above)
        return stamped is not None and (stamped.time is not None or stamped.seq is not None)
    return True


def unwrap_lines(lines: Iterable[str]) -> Iterator[str]:
    """The lines, each continuation (`continues`) joined to the line above it as it was (the
    wrap kept every character), up to `MAX_JOINED` characters."""
    held: str | None = None
    for raw in lines:
        if held is not None:
            # (a bracket or a label begins or marks a line of its own: told without a call)
            if (
                raw[:1] != "["
                and LABEL not in raw
                and len(held) + len(raw) <= MAX_JOINED
                and continues(held, raw)
            ):
                held = held.rstrip("\r\n") + raw
                continue
            yield held
        held = raw
    if held is not None:
        yield held


def _split_escaped_newlines(record: KernelLine) -> Iterator[KernelLine]:
    """A /dev/kmsg record holding several printed lines (escaped as \\x0a): one line each."""
    for part in record.body.split("\\x0a"):
        if part:
            yield KernelLine(body=part, time=record.time, seq=record.seq, caller=record.caller)


def _split_kmsg(line: str) -> KernelLine | None:
    match = _KMSG.match(line)
    if match is None:
        return None
    caller_match = _KMSG_CALLER.search(match.group(4)) if match.group(4) else None
    usec = int(match.group(3))
    return KernelLine(
        body=line[match.end() :],
        time=f"{usec // 1_000_000}.{usec % 1_000_000:06d}",  # as dmesg prints the same clock
        seq=int(match.group(2)),
        caller=caller_match.group(1) if caller_match else None,
    )


class _Prefixes:
    """What stripping has found so far on one line."""

    __slots__ = ("caller", "kernel_time", "wall_time")

    def __init__(self) -> None:
        self.kernel_time: str | None = None
        self.wall_time: str | None = None
        self.caller: str | None = None


def _split_prefixed(line: str) -> KernelLine:
    found = _Prefixes()
    rest = line
    for _ in range(_MAX_PREFIXES):
        stripped = _strip_one(rest, found)
        if stripped is None:
            break
        rest = stripped
    time = found.kernel_time if found.kernel_time is not None else found.wall_time
    return KernelLine(body=rest, time=time, caller=found.caller)


def _strip_one(rest: str, found: _Prefixes) -> str | None:
    """Strip the outermost prefix of `rest` into `found`; None when there is none."""
    if not rest:
        return None
    first = rest[0]
    if first == "[":
        return _strip_bracket(rest, found)
    if first == "<":
        level = _LEVEL.match(rest)
        return rest[level.end() :] if level else None
    if first.isdigit():
        return _strip_iso(rest, found)
    if first.isalpha():
        return _strip_word_prefix(rest, found)
    return None


def _strip_bracket(rest: str, found: _Prefixes) -> str | None:
    end = rest.find("]", 1, 64)
    if end < 0:
        return None
    content = rest[1:end]
    after = rest[end + 1 :]
    if _is_number(content) or _BRACKET_TIME.fullmatch(content):
        if found.kernel_time is None:
            found.kernel_time = content.strip()
        return _after_kernel_stamp(after, found)
    caller = _BRACKET_CALLER.fullmatch(content)
    if caller is not None:
        found.caller = caller.group(1)
        return after[1:] if after.startswith(" ") else after
    return None


def _is_number(content: str) -> bool:
    """Cheap test for the plain `dmesg` stamp "  123.456789" (also "+0.000316")."""
    digits = content.lstrip(" +").replace(".", "", 1)
    return digits.isdigit()


def _after_kernel_stamp(after: str, found: _Prefixes) -> str:
    """After a kernel stamp: one separator space, and a journald monotonic "host kernel: "."""
    if after.startswith(" "):
        after = after[1:]
    if found.wall_time is None and " kernel" in after[:80]:
        tag = _HOST_TAG.match(after)
        if tag is not None and tag.group("host") is not None:
            return after[tag.end() :]
    return after


def _strip_iso(rest: str, found: _Prefixes) -> str | None:
    match = _ISO_STAMP.match(rest)
    if match is None:
        return None
    after = rest[match.end() :]
    tag = _HOST_TAG.match(after) if " kernel" in after[:80] or after.startswith("kernel") else None
    if tag is not None:
        found.wall_time = match.group("ts")
        return after[tag.end() :]
    found.kernel_time = found.kernel_time or match.group("ts")
    return after


def _strip_word_prefix(rest: str, found: _Prefixes) -> str | None:
    if rest.startswith("kernel:"):
        return rest[8:] if rest.startswith("kernel: ") else rest[7:]
    head = rest[:12]
    if ":" in head and " " not in head[:4]:
        facility = _FACILITY.match(rest)
        if facility is not None:
            return rest[facility.end() :]
    if ":" not in rest[6:40] or found.wall_time is not None:
        return None
    for pattern in (_SYSLOG, _SYSLOG_FULL):
        match = pattern.match(rest)
        if match is not None:
            found.wall_time = match.group("ts")
            return rest[match.end() :]
    return None
