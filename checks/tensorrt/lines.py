"""TensorRT log lines: the prefixes of what shipped the log stripped, then where a message
starts and its severity (`read_line`).

Timestamps (one or more stacked ``[08/29/2024-10:12:01]``), severity tags (``[I]``, ``[W]``,
``[TRT] [W]``, ``[TensorRT] WARNING:``, ``[INFO]``), source tags and the ``&&&&`` status lines
start a message; a line with none of them continues the message above it. The shippers'
prefixes (docker-compose, ``kubectl logs --prefix``, ``--timestamps``, Talos, journald,
torchrun) go first (`unshipped`); ONNX Runtime's logger wraps TensorRT's own lines
(`_ort_line`); other programs' lines (a Python traceback or warning, Python ``logging``, vLLM,
a shell prompt) start a message that counts for nothing.
"""

from __future__ import annotations

import re
from typing import Literal

from msgspec import Struct

Severity = Literal["error", "warning", "info", "verbose"]

_DATE_SLASH = r"\d{1,2}/\d{1,2}/\d{2,4}[-\s]\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"
_DATE_ISO = r"\d{4}-\d{2}-\d{2}[T\s]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
_TIME = r"\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?"

_TOKEN_RE = re.compile(
    rf"""[ \t]*(?:
        \[[ \t]*(?:{_DATE_SLASH}|{_DATE_ISO}|{_TIME})(?:[ \t]+(?P<tslevel>[A-Za-z_]+))?[ \t]*\]
      | (?P<bare>{_DATE_ISO})(?=[ \t])
      | \[(?P<tag>[^\[\]\r\n]{{1,48}})\](?P<sep>:(?=[ \t]|$)|[ \t]+-(?=[ \t]))?
      | (?P<word>INTERNAL_ERROR|ERROR|Error|FATAL|WARNING|Warning|WARN|INFO|VERBOSE):(?=[ \t]|$)
      | (?P<status>&&&&)(?=[ \t])
    )""",
    re.VERBOSE,
)

_LETTER_SEVERITY: dict[str, Severity] = {
    "E": "error",
    "F": "error",
    "!": "error",
    "W": "warning",
    "I": "info",
    "V": "verbose",
}
_WORD_SEVERITY: dict[str, Severity] = {
    "ERROR": "error",
    "INTERNAL_ERROR": "error",
    "FATAL": "error",
    "CRITICAL": "error",
    "WARNING": "warning",
    "WARN": "warning",
    "INFO": "info",
    "VERBOSE": "verbose",
    "DEBUG": "verbose",
    "TRACE": "verbose",
}
_SOURCE_TAGS = frozenset({"TRT", "TENSORRT", "TRT-LLM", "TENSORRT-LLM"})
# The levels a timestamp tag "[<date> LEVEL]" names: the TensorRT loggers that print it (ONNX
# Runtime's TensorRT execution provider, onnx-tensorrt's backend) call kINTERNAL_ERROR "BUG"
# and kVERBOSE "UNKNOWN".
_STAMP_LEVELS: dict[str, Severity] = {**_WORD_SEVERITY, "BUG": "error", "UNKNOWN": "verbose"}

# An untagged line that is a build-failed line starts a message of its own (FACTS: build-failed
# lines are errors).
BUILD_FAILED_RE = re.compile(
    r"&&&& FAILED\b|build serialized network failed|building (?:the )?engine failed"
    r"|engine build(?:ing)? failed|failed to build (?:the )?(?:tensorrt )?engine",
    re.IGNORECASE,
)
NO_IMPLEMENTATION_RE = re.compile(r"Could not find any implementation", re.IGNORECASE)

# What shipped the log, in front of each line (stripped, possibly several, before the rest).
_SHIPPER_RE = re.compile(
    r"""(?:
        [A-Za-z0-9][\w.-]*[ \t]+\|(?:[ ]|$)                  # docker-compose: "face_1  | "
      | \[pod/[^\]\s]+\][ ]                                  # kubectl logs --prefix
      | \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z[ ]          # docker/kubectl --timestamps
      | \d{1,3}(?:\.\d{1,3}){3}:[ ]                            # talosctl logs: the node
      | [A-Z][a-z]{2}[ ][ \d]\d[ ]\d{2}:\d{2}:\d{2}(?:\.\d+)?[ ] # journald short(-precise)
        (?:[\w.-]+[ ])?[\w./@-]+(?:\[\d+\])?:[ ]
      | \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})[ ]
        [\w.-]+[ ][\w./@-]+(?:\[\d+\])?:[ ]                    # journald short-iso
      | \[rank\d+\]:[ ]?                                      # torchrun
    )""",
    re.VERBOSE,
)
_MAX_SHIPPERS = 4
# ONNX Runtime's logger, in front of each line it writes (its colour on a terminal, its time,
# "[W:onnxruntime:<logger>, <file>:<line> <function>] "): a shipper's prefix where it carries
# TensorRT's own messages (its TensorRT execution provider's logger, also behind Triton's
# onnxruntime backend, in tensorrt_execution_provider.h), whose "[<date> WARNING]" is TensorRT's
# severity; any other of its lines (session, graph, other execution providers) is ONNX Runtime's.
_ORT_RE = re.compile(
    rf"(?:\x1b\[[0-9;]*m)?(?:{_DATE_ISO}[ \t]+)?"
    r"\[(?P<letter>[VIWEF]):onnxruntime:[^,\]\r\n]*,[ \t]*(?P<where>[^\]\r\n]*)\][ \t]?"
)
_ORT_TENSORRT_LOGGER = "tensorrt_execution_provider.h:"
_ANSI_RESET = "\x1b[m"  # the end of ONNX Runtime's colour, at the end of its line
# A line another program printed into the stream: it starts a message that is neither a
# warning nor an error (and its untagged continuation lines are its own).
_OTHER_PROGRAM_RE = re.compile(
    r"""(?:
        Traceback[ ]\(most[ ]recent[ ]call[ ]last\):
      | \S+:\d+:[ ]\w*Warning:[ ]                              # Python's warnings module
      | (?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:           # Python logging's default
      | (?:\([^)]*\)[ ]+)?(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)[ ]\d{2}-\d{2}[ ]\d{2}:\d{2}
      | (?:\([\w.-]+\)[ ])?[\w.-]+@[\w.-]+:\S*[#$][ ]            # a shell prompt
    )""",
    re.VERBOSE,
)


class Line(Struct, frozen=True):
    """One physical line: whether a prefix starts a message, its severity and its text."""

    starts: bool
    severity: Severity | None
    text: str
    indented: bool
    other: bool = False  # another program's line: a message that counts for nothing


class _Prefix(Struct):
    """A line's leading tokens: how many are known, the severity, where they end, a status line."""

    known: int = 0
    severity: Severity | None = None
    end: int = 0
    status: bool = False


def _tag_kind(tag: str) -> tuple[bool, Severity | None]:
    """(is a known tag, its severity) for the content of a ``[...]`` token."""
    content = tag.strip()
    if content in _LETTER_SEVERITY:
        return True, _LETTER_SEVERITY[content]
    upper = content.upper()
    if upper in _WORD_SEVERITY:
        return True, _WORD_SEVERITY[upper]
    if upper in _SOURCE_TAGS or upper.startswith("TORCH-TENSORRT"):
        return True, None
    return False, None


def _token_kind(match: re.Match[str]) -> tuple[bool, Severity | None]:
    if match.group("tag") is not None:
        return _tag_kind(match.group("tag"))
    if match.group("word") is not None:
        return True, _WORD_SEVERITY[match.group("word").upper()]
    level = match.group("tslevel")
    return True, _STAMP_LEVELS.get(level.upper()) if level else None


def _token_end(match: re.Match[str]) -> int:
    """Where a known token ends: DeepStream's ``[TRT]:`` colon goes with it, and the `` - `` after
    ``[Torch-TensorRT ...]``; any other tag's `` - `` is the text's own bullet."""
    sep = match.group("sep")
    tag = match.group("tag")
    if sep is not None and sep.endswith("-") and not tag.upper().startswith("TORCH-TENSORRT"):
        return match.start("sep")
    return match.end()


def _read_prefix(raw: str) -> _Prefix:
    """Walk the leading tokens. One unknown ``[...]`` (a launcher's process tag) may come first
    when a known token follows it."""
    prefix = _Prefix()
    pos = 0
    while (match := _TOKEN_RE.match(raw, pos)) is not None and match.end() > pos:
        if match.group("status") is not None:
            prefix.status = True
            prefix.end = match.start("status")
            break
        known, severity = _token_kind(match)
        if not known:
            if pos != 0:
                break
            pos = match.end()
            continue
        prefix.known += 1
        prefix.severity = prefix.severity or severity
        prefix.end = pos = _token_end(match)
    return prefix


def _ort_line(raw: str) -> Line | None:
    """A line ONNX Runtime's logger wrote (`_ORT_RE`), else None. TensorRT's messages are read
    as they are without the wrapper: by TensorRT's own severity tag, else by the level ONNX
    Runtime logged them at; its other lines are another program's."""
    match = _ORT_RE.match(raw)
    if match is None:
        return None
    rest = raw[match.end() :].removesuffix(_ANSI_RESET)
    if not match.group("where").startswith(_ORT_TENSORRT_LOGGER):
        return Line(True, None, rest.strip(), False, other=True)
    line = _split_line(rest)
    severity = line.severity or _LETTER_SEVERITY[match.group("letter")]
    return Line(True, severity, line.text, line.indented)


def _split_line(raw: str) -> Line:
    prefix = _read_prefix(raw)
    if prefix.status:
        rest = raw[prefix.end :].strip()
        severity: Severity | None = "error" if rest.startswith("&&&& FAILED") else None
        return Line(True, prefix.severity or severity, rest, False)
    if prefix.known == 0:
        text = raw.strip()
        failed = BUILD_FAILED_RE.match(text) is not None
        if not failed and _OTHER_PROGRAM_RE.match(text) is not None:
            return Line(True, None, text, False, other=True)
        return Line(failed, "error" if failed else None, text, False)
    rest = raw[prefix.end :]
    indented = rest.startswith(("  ", "\t", " \t"))
    return Line(True, prefix.severity, rest.strip(), indented)


def read_line(raw: str) -> Line:
    """What a line (its shippers' prefixes stripped) says: ONNX Runtime's, else its own."""
    return _ort_line(raw) or _split_line(raw)


def unshipped(raw: str) -> str:
    """The line without the prefixes of what shipped the log."""
    for _ in range(_MAX_SHIPPERS):
        match = _SHIPPER_RE.match(raw)
        if match is None or match.end() == 0:
            break
        raw = raw[match.end() :]
    return raw
