"""Pure, streaming scanner for TensorRT build logs. No I/O: it is given lines.

Reads ``trtexec`` output (``[I]``/``[W]``/``[E]``/``[V]``/``[F]``, with or without one or more
stacked ``[08/29/2024-10:12:01]`` timestamps, the ``&&&& RUNNING/PASSED/FAILED`` status lines),
TensorRT loggers through Python/C++ (``[TRT] [W]``, ``[TensorRT] WARNING:``, ``[TRT-LLM] [I]``,
``[TensorRT-LLM][ERROR]``, DeepStream's ``WARNING: [TRT]:``), TensorRT-LLM build output, TRT
7/8/10 wording and ``[INFO]``/``[WARNING]``/``[ERROR]`` tags.

Logs as they are shipped: the prefixes of whatever carried the log are stripped first, like
timestamps (docker-compose ``face_1  | ``, ``kubectl logs --prefix``'s ``[pod/NAME/CONTAINER]``,
docker/kubectl ``--timestamps``, a Talos node's ``10.5.0.2: ``, journald's ``Mar 29 15:38:59
host python3[1234]: ``, torchrun's ``[rank0]: ``). Lines of other programs in the same stream (a
Python traceback or warning, Python ``logging``'s ``INFO:root:``, vLLM's ``INFO 05-21 10:00:00``,
a shell prompt) start a message of their own that is neither a warning nor an error, so that
neither they nor their continuation lines join a TensorRT message.

Message boundaries (tests/corpus/shared/ANNOTATION-NOTES.md, "trt"): a line with a timestamp,
severity or source prefix starts a message; a line with none continues the message above it.
A tagged line that cannot stand alone continues the message above it too: an indented item of
a list the line before opened (a line ending in ``:``), and the bullets and fixed follow-up
sentences of TensorRT's weight-conversion report. Error and fallback texts keep the log's
words with the prefixes stripped; an error keeps its continuation lines joined with ``\\n``,
a fallback's reason is the first line of its message.

Memory stays bounded whatever the input size: one message is held at a time, each line and
message text is cut at a fixed length, and every list is capped (the rest is counted and
``truncated`` set).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from msgspec import Struct, field

from .gpu_arch import sm_from_capability

__all__ = [
    "MAX_ITEMS",
    "MAX_LINE_CHARS",
    "MAX_TEXT_CHARS",
    "Fallback",
    "PrecisionFallback",
    "TrtLog",
    "scan_trt_log",
]

MAX_ITEMS = 1000
"""Default cap on each list (fallbacks, precision fallbacks, errors)."""
MAX_LINE_CHARS = 16_384
"""Characters of one physical line that are looked at; the rest is ignored."""
MAX_TEXT_CHARS = 4_096
"""Characters kept of one message's text (an error with its continuation lines)."""

Severity = Literal["error", "warning", "info", "verbose"]


# --------------------------------------------------------------------------- results


class Fallback(Struct, frozen=True):
    """A layer or tactic that runs on a slower path than asked (DLA->GPU, skipped tactic)."""

    layer: str | None
    reason: str

    def to_fact(self) -> dict[str, object]:
        return {"layer": self.layer, "reason": self.reason}


class PrecisionFallback(Struct, frozen=True):
    """A layer kept at or moved to a higher precision than requested (``from`` -> ``to``).

    For a missing INT8 scale ``to`` is FP16 when the printed build options enable FP16 (BF16
    likewise), else FP32. ``requested`` is None when neither the message nor the printed build
    options name a lower precision.
    """

    layer: str | None
    requested: str | None
    actual: str

    def to_fact(self) -> dict[str, object]:
        return {"layer": self.layer, "from": self.requested, "to": self.actual}


class TrtLog(Struct, frozen=True):
    """What one TensorRT log says. Lists are capped; the ``*_total`` fields count them all.

    ``gpu`` is the device name as printed (trtexec's "Selected Device:", "Engine built for GPU
    N (name)"); ``sm`` only a printed compute capability: an engine plan's "got compute X.Y"
    beats trtexec's "Compute Capability: X.Y", which beats an ``SM_XY`` mention. ``layers`` is
    "Builder completed with N layers", else the last verbose "After ...: N layers", else
    "Original: N layers"; ``fused`` a printed "fused N", else the number of verbose "Fusing X
    with Y" lines. ``build_time_s`` is TensorRT-LLM's "Total time of building all engines",
    else trtexec's "Engine built in" / Polygraphy's "Finished engine building in", else the sum
    of TensorRT's "Engine generation completed in". ``peak_memory_mib`` is the largest GPU
    figure of the ``[MemUsageChange]`` (``now: ... GPU Y``), ``[MemUsageSnapshot]`` and
    ``[MemUsageStats]`` lines (host figures are not GPU memory and are left out).
    ``truncated``: a list was capped, or an error's (or a fallback's) text was cut.
    """

    file: str
    trt_version: str | None
    gpu: str | None
    sm: str | None
    fallbacks: tuple[Fallback, ...]
    precision_fallbacks: tuple[PrecisionFallback, ...]
    errors: tuple[str, ...]
    warnings: int
    layers: int | None
    fused: int | None
    build_time_s: float | None
    peak_memory_mib: float | None
    truncated: bool
    fallbacks_total: int
    precision_fallbacks_total: int
    errors_total: int

    def to_fact(self) -> dict[str, object]:
        """The facts.md ``trt`` log object, plus file/layers/fused/timing/memory/truncated."""
        return {
            "file": self.file,
            "trt_version": self.trt_version,
            "built_on": {"gpu": self.gpu, "sm": self.sm},
            "fallbacks": [item.to_fact() for item in self.fallbacks],
            "precision_fallbacks": [item.to_fact() for item in self.precision_fallbacks],
            "errors": list(self.errors),
            "warnings": self.warnings,
            "layers": self.layers,
            "fused": self.fused,
            "build_time_s": self.build_time_s,
            "peak_memory_mib": self.peak_memory_mib,
            "truncated": self.truncated,
        }


# --------------------------------------------------------------------------- line prefixes

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

# An untagged line that is a build-failed line starts a message of its own (FACTS: build-failed
# lines are errors).
_BUILD_FAILED_RE = re.compile(
    r"&&&& FAILED\b|build serialized network failed|building (?:the )?engine failed"
    r"|engine build(?:ing)? failed|failed to build (?:the )?(?:tensorrt )?engine",
    re.IGNORECASE,
)
_NO_IMPLEMENTATION_RE = re.compile(r"Could not find any implementation", re.IGNORECASE)

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


class _Line(Struct, frozen=True):
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
    return True, _WORD_SEVERITY.get(level.upper()) if level else None


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


def _split_line(raw: str) -> _Line:
    prefix = _read_prefix(raw)
    if prefix.status:
        rest = raw[prefix.end :].strip()
        severity: Severity | None = "error" if rest.startswith("&&&& FAILED") else None
        return _Line(True, prefix.severity or severity, rest, False)
    if prefix.known == 0:
        text = raw.strip()
        failed = _BUILD_FAILED_RE.match(text) is not None
        if not failed and _OTHER_PROGRAM_RE.match(text) is not None:
            return _Line(True, None, text, False, other=True)
        return _Line(failed, "error" if failed else None, text, False)
    rest = raw[prefix.end :]
    indented = rest.startswith(("  ", "\t", " \t"))
    return _Line(True, prefix.severity, rest.strip(), indented)


# --------------------------------------------------------------------------- classification

_WEIGHT_REPORT_RE = re.compile(
    r"- \d+ weights are affected by this issue"
    r"|If this is not the desired behavior, please modify the weights"
    r"|Check verbose logs for the list of affected weights"
)

_DLA_GPU_RE = re.compile(
    r"device type to GPU|not (?:supported|running) on DLA, falling back to GPU"
    r"|Switching to GPU (?:fallback|for layer)|(?:falling|fall|fell) ?back to GPU",
    re.IGNORECASE,
)
_DLA_LAYER_RES = (
    re.compile(r"^Layer '(?P<name>.+?)' \([^)]*\):"),
    re.compile(r"Switching (?!this layer's)(?P<name>.+?) device type to GPU"),
    re.compile(r"but layer (?P<name>.+?) is not (?:supported|running) on DLA"),
    re.compile(r"Validation failed for DLA layer: (?P<name>.+?)\. Switching to GPU fallback"),
    re.compile(r"Switching to GPU for layer (?P<name>.+?)\.?\s*$"),
)
# DLA was asked for every layer and none can run there: the whole network runs on the GPU
_NO_DLA_LAYER_RE = re.compile(
    r"setDefaultDeviceType was called but no layer in the network can run on DLA"
)

_MISSING_SCALE_RE = re.compile(
    r"Missing (?:scale and zero-point|dynamic range) for tensor:? (?P<name>.+?)"
    r"(?:, expect fall ?back\b.*)?$"
)
_REJECT_INT8_RE = re.compile(
    r"Rejecting some int8 implementation of layer (?P<name>.+?) due to missing int8 scales",
    re.IGNORECASE,
)
_NON_INT8_RE = re.compile(r"fall ?back to non-int8", re.IGNORECASE)
_TENSOR_NAME_RE = re.compile(r"for tensor (?P<name>.+?)(?:,| for nbSpatialDims|$)")

_PRECISION = r"FP32|FP16|BF16|TF32|FP8|INT8|INT4|FP4|float32|float16|half"
_RUNNING_IN_RE = re.compile(
    rf"(?<!to )\b(?:running|runs|will run|run|executing|executed|kept|keeping|"
    rf"fall(?:s|ing)? ?back to|fallback to|fell back to|revert(?:ed|ing)? to)"
    rf"\s+(?:in\s+|at\s+)?(?P<to>{_PRECISION})\b",
    re.IGNORECASE,
)
_PRECISION_TOKEN_RE = re.compile(rf"\b(?P<p>{_PRECISION}|int8|Int8)\b", re.IGNORECASE)
_ADVICE_RE = re.compile(r"\b(?:can help|may cause|consider|recommend)", re.IGNORECASE)
_PRECISION_HINTS = ("FP", "INT", "TF32", "FLOAT", "HALF")
_RANK = {"FP32": 32, "TF32": 19, "FP16": 16, "BF16": 16, "FP8": 8, "INT8": 8, "INT4": 4, "FP4": 4}
_ALIASES = {"FLOAT32": "FP32", "FLOAT16": "FP16", "HALF": "FP16"}

_SKIPPING_TACTIC_RE = re.compile(r"Skipping tactic\b")  # also "UNSUPPORTED_STATESkipping"
_NO_WORKSPACE_RE = re.compile(r"Some tactics do not have sufficient workspace memory")
_FALLBACK_TO_RE = re.compile(r"\b(?:fall(?:s|ing)? ?back|fallback|fell back)\s+(?:to|on)\b", re.I)

_LAYER_RES = (
    re.compile(r"^Layer '(?P<name>[^']+)'"),
    re.compile(r'^Layer "(?P<name>[^"]+)"'),
    re.compile(r"^Layer (?P<name>[^\s:'\"(][^:]*?): "),
    re.compile(r"\b[Ll]ayer '(?P<name>[^']+)'"),
    re.compile(r'\b[Ll]ayer "(?P<name>[^"]+)"'),
    re.compile(r"\b(?:for|of|in) [Ll]ayer:? (?P<name>[^\s,;'\"]+?)[.,;:]?(?=\s|$)"),
    re.compile(r"^(?P<name>[^\s:]*[a-z/.][^\s:]*): "),
)


def _layer_of(text: str) -> str | None:
    for pattern in _LAYER_RES:
        match = pattern.search(text)
        if match is not None:
            return match.group("name")
    return None


def _precision_name(token: str) -> str:
    upper = token.upper()
    return _ALIASES.get(upper, upper)


def _dla_fallback(text: str) -> Fallback | None:
    if _NO_DLA_LAYER_RE.search(text) is not None:
        return Fallback(None, text)
    if _DLA_GPU_RE.search(text) is None:
        return None
    for pattern in _DLA_LAYER_RES:
        match = pattern.search(text)
        if match is not None:
            return Fallback(match.group("name"), text)
    return Fallback(_layer_of(text), text)


def _int8_fallback(text: str, enabled: frozenset[str]) -> PrecisionFallback | None:
    """INT8 implementations dropped for a missing scale / dynamic range."""
    match = _MISSING_SCALE_RE.search(text) or _REJECT_INT8_RE.search(text)
    if match is None and _NON_INT8_RE.search(text):
        match = _TENSOR_NAME_RE.search(text)
    if match is None:
        return None
    actual = "FP16" if "FP16" in enabled else "BF16" if "BF16" in enabled else "FP32"
    return PrecisionFallback(match.group("name"), "INT8", actual)


def _requested_precision(text: str, actual: str, enabled: frozenset[str]) -> str | None:
    """The precision asked for: a lower one the message names, else the lowest one the build
    enabled below ``actual``, else None."""
    limit = _RANK[actual]
    for match in _PRECISION_TOKEN_RE.finditer(text):
        name = _precision_name(match.group("p"))
        if _RANK[name] < limit:
            return name
    lower = [name for name in enabled if _RANK[name] < limit]
    return min(lower, key=lambda name: _RANK[name]) if lower else None


def _names_higher(text: str, actual: str) -> bool:
    limit = _RANK[actual]
    names = (_precision_name(m.group("p")) for m in _PRECISION_TOKEN_RE.finditer(text))
    return any(_RANK[name] > limit for name in names)


def _higher_precision(text: str, enabled: frozenset[str]) -> PrecisionFallback | None:
    """``running in FP32``-style messages: a layer kept at a higher precision than asked."""
    match = _RUNNING_IN_RE.search(text)
    if match is None or _ADVICE_RE.search(text):
        return None
    actual = _precision_name(match.group("to"))
    rest = text[: match.start("to")] + text[match.end("to") :]
    requested = _requested_precision(rest, actual, enabled)
    if requested is None and _names_higher(rest, actual):
        return None  # moved down from a named higher precision: a slower path is not this kind
    return PrecisionFallback(_layer_of(text), requested, actual)


def _slow_path(text: str) -> Fallback | None:
    """Skipped tactics, too little workspace, explicit ``fallback to X``."""
    if _NO_IMPLEMENTATION_RE.search(text):
        return None
    if _SKIPPING_TACTIC_RE.search(text) or _NO_WORKSPACE_RE.search(text):
        return Fallback(None, text)
    if _FALLBACK_TO_RE.search(text):
        return Fallback(_layer_of(text), text)
    return None


def _classify(text: str, enabled: frozenset[str]) -> Fallback | PrecisionFallback | None:
    """The fallback a (non-error) message's first line reports, if any. A DLA->GPU switch is a
    fallback even when it names precisions; INT8/precision checks come before the generic
    ``fallback to`` so that "expect fall back to non-int8" is a precision fallback.

    Plain substring tests skip the regular expressions for the many lines that cannot match.
    """
    upper = text.upper()
    if ("GPU" in upper or "DLA" in upper) and (found := _dla_fallback(text)) is not None:
        return found
    if ("INT8" in upper or "MISSING " in upper) and (
        int8 := _int8_fallback(text, enabled)
    ) is not None:
        return int8
    if (
        any(word in upper for word in _PRECISION_HINTS)
        and (higher := _higher_precision(text, enabled)) is not None
    ):
        return higher
    if "TACTIC" in upper or "BACK" in upper:
        return _slow_path(text)
    return None


def _is_error(severity: Severity | None, first: str) -> bool:
    if severity == "error":
        return True
    return severity is None and bool(
        _BUILD_FAILED_RE.search(first) or _NO_IMPLEMENTATION_RE.search(first)
    )


# --------------------------------------------------------------------------- per-line facts

_VERSION_LINE_RE = re.compile(r"\bTensorRT version:?\s+v?(?P<v>\d+\.\d+(?:\.\d+)?)")
_VERSION_BANNER_RE = re.compile(r"\[TensorRT v(?P<n>\d{4,6})\]")
_SELECTED_DEVICE_RE = re.compile(r"^Selected Device: (?P<gpu>.+?)\s*$")
_BUILT_FOR_RE = re.compile(r"\bEngine built for GPU(?: \d+)? \((?P<gpu>[^)]+)\)")
_PLAN_COMPUTE_RE = re.compile(r"expecting compute \d+\.\d+ got compute (?P<cc>\d+\.\d)\b")
_CAPABILITY_RE = re.compile(r"\b[Cc]ompute [Cc]apability:?\s+(?P<cc>\d{1,2}\.\d)\b")
_SM_RE = re.compile(r"\b(?:SM|sm)_(?P<n>\d{2,3})[a-f]?\b")
_PRECISION_BANNER_RE = re.compile(r"^Precision: (?P<p>.+)$")
_CLI_PRECISION_RE = re.compile(r"--(?P<p>fp16|bf16|int8|fp8|best)\b")
_LAYERS_FINAL_RE = re.compile(r"\bBuilder completed with (?P<n>\d+) layers")
_LAYERS_AFTER_RE = re.compile(r"^After [^:]+: (?P<n>\d+) layers\b")
_LAYERS_ORIGINAL_RE = re.compile(r"^Original: (?P<n>\d+) layers\b")
_LAYER_COUNT_RES = ((3, _LAYERS_FINAL_RE), (2, _LAYERS_AFTER_RE), (1, _LAYERS_ORIGINAL_RE))
_FUSED_RE = re.compile(r"\bfused (?P<n>\d+)\b", re.IGNORECASE)
_FUSING_RE = re.compile(r"\bFusing \S.*? with \S")
_GENERATION_RE = re.compile(r"\bEngine generation completed in (?P<s>\d+(?:\.\d+)?) seconds")
_APP_BUILT_RE = re.compile(
    r"^(?:Engine built in|Finished engine building in) (?P<s>\d+(?:\.\d+)?) (?:sec|seconds)\b"
)
_ALL_ENGINES_RE = re.compile(
    r"\bTotal time of building all engines: (?P<h>\d+):(?P<m>\d{2}):(?P<s>\d{2})"
)
_MEM_NOW_RE = re.compile(r"now: CPU [\d.]+(?: ?MiB)?, GPU (?P<gpu>\d+(?:\.\d+)?)")
_MEM_GPU_RE = re.compile(r"\bGPU:? (?P<gpu>\d+(?:\.\d+)?) ?MiB")


def _banner_version(number: str) -> str:
    """trtexec's ``[TensorRT vN]``: TRT 10+ is major*10000+minor*100+patch (100800 = 10.8.0),
    earlier major*1000+minor*100+patch (8601 = 8.6.1, 8003 = 8.0.3)."""
    value = int(number)
    if value >= 100_000:
        major, rest = divmod(value, 10_000)
    else:
        major, rest = divmod(value, 1_000)
    minor, patch = divmod(rest, 100)
    return f"{major}.{minor}.{patch}"


class _Facts(Struct):
    """Facts read line by line, whichever message a line belongs to."""

    version: str | None = None
    gpu: str | None = None
    sm: str | None = None
    sm_rank: int = 0
    enabled: frozenset[str] = frozenset()
    layers: int | None = None
    layers_rank: int = 0
    fused: int | None = None
    fusing: int = 0
    generation_s: float = 0.0
    generation_seen: bool = False
    app_build_s: float | None = None
    all_engines_s: float | None = None
    peak_gpu_mib: float | None = None

    def observe(self, text: str) -> None:
        self._version(text)
        self._device(text)
        self._precisions(text)
        self._graph(text)
        self._timing(text)
        self._memory(text)

    def _version(self, text: str) -> None:
        if self.version is not None or "TensorRT v" not in text:
            return
        if (line := _VERSION_LINE_RE.search(text)) is not None:
            self.version = line.group("v")
        elif (banner := _VERSION_BANNER_RE.search(text)) is not None:
            self.version = _banner_version(banner.group("n"))

    def _device(self, text: str) -> None:
        if self.gpu is None and ("Selected Device: " in text or "Engine built for" in text):
            match = _SELECTED_DEVICE_RE.search(text) or _BUILT_FOR_RE.search(text)
            if match is not None:
                self.gpu = match.group("gpu")
        # The engine plan's own compute capability beats the device banner, which beats an
        # SM_XY mention; within a kind the first printed wins.
        if self.sm_rank < 3 and ("apability" in text or "got compute" in text):
            for rank, pattern in ((3, _PLAN_COMPUTE_RE), (2, _CAPABILITY_RE)):
                if self.sm_rank < rank and (match := pattern.search(text)) is not None:
                    self.sm, self.sm_rank = sm_from_capability(match.group("cc")), rank
        if self.sm_rank < 1 and ("SM_" in text or "sm_" in text):
            if (mention := _SM_RE.search(text)) is not None:
                self.sm, self.sm_rank = f"sm_{mention.group('n')}", 1

    def _precisions(self, text: str) -> None:
        if not text.startswith(("Precision: ", "&&&& RUNNING")):
            return
        if (banner := _PRECISION_BANNER_RE.search(text)) is not None:
            names = {_precision_name(p.strip()) for p in banner.group("p").split("+")}
            self.enabled = self.enabled | frozenset(names & _RANK.keys())
        elif text.startswith("&&&& RUNNING"):
            flags = {m.group("p").upper() for m in _CLI_PRECISION_RE.finditer(text)}
            if "BEST" in flags:
                flags |= {"FP16", "INT8"}
            self.enabled = self.enabled | frozenset(flags & _RANK.keys())

    def _graph(self, text: str) -> None:
        if " layers" in text:
            for rank, pattern in _LAYER_COUNT_RES:
                if self.layers_rank <= rank and (match := pattern.search(text)) is not None:
                    self.layers, self.layers_rank = int(match.group("n")), rank
                    break
        if self.fused is None and "used " in text:
            if (fused := _FUSED_RE.search(text)) is not None:
                self.fused = int(fused.group("n"))
        if "Fusing " in text and _FUSING_RE.search(text) is not None:
            self.fusing += 1

    def _timing(self, text: str) -> None:
        if " in " not in text and "all engines" not in text:
            return
        if (generation := _GENERATION_RE.search(text)) is not None:
            self.generation_s += float(generation.group("s"))
            self.generation_seen = True
        elif (app := _APP_BUILT_RE.search(text)) is not None:
            self.app_build_s = float(app.group("s"))
        elif (total := _ALL_ENGINES_RE.search(text)) is not None:
            hours, minutes, seconds = (int(total.group(k)) for k in ("h", "m", "s"))
            self.all_engines_s = float(hours * 3600 + minutes * 60 + seconds)

    def _memory(self, text: str) -> None:
        if "[MemUsage" not in text:
            return
        match = _MEM_NOW_RE.search(text) or _MEM_GPU_RE.search(text)
        if match is not None:
            value = float(match.group("gpu"))
            peak = self.peak_gpu_mib
            self.peak_gpu_mib = value if peak is None else max(peak, value)

    def build_time_s(self) -> float | None:
        if self.all_engines_s is not None:
            return self.all_engines_s
        if self.app_build_s is not None:
            return self.app_build_s
        return round(self.generation_s, 6) if self.generation_seen else None

    def fused_count(self) -> int | None:
        if self.fused is not None:
            return self.fused
        return self.fusing or None


# --------------------------------------------------------------------------- the scanner


class _Message(Struct):
    """The open message: its first line and the parts after it (capped), and how it counts."""

    severity: Severity | None
    counted: bool  # False: a follow-up line of a report, or another program's message
    first: str
    parts: list[str] = field(default_factory=list)
    chars: int = 0
    list_open: bool = False
    cut: bool = False
    first_cut: bool = False
    other: bool = False  # another program's: neither a warning, an error nor a fallback

    def add(self, text: str) -> None:
        room = MAX_TEXT_CHARS - self.chars
        if room <= 0:
            self.cut = True
            return
        piece = text if len(text) <= room else text[:room]
        self.cut = self.cut or len(piece) < len(text)
        self.parts.append(piece)
        self.chars += len(piece) + 1

    def text(self) -> str:
        return "\n".join(self.parts)


def _new_message(line: _Line, counted: bool) -> _Message:
    message = _Message(line.severity, counted and not line.other, line.text[:MAX_TEXT_CHARS])
    message.other = line.other
    message.first_cut = len(line.text) > MAX_TEXT_CHARS
    message.add(line.text)
    message.list_open = line.text.endswith(":")
    return message


class _Totals(Struct):
    """Capped lists and their full counts."""

    cap: int
    fallbacks: list[Fallback] = field(default_factory=list)
    precision: list[PrecisionFallback] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    fallbacks_total: int = 0
    precision_total: int = 0
    errors_total: int = 0
    warnings: int = 0
    cut: bool = False

    def error(self, text: str) -> None:
        self.errors_total += 1
        if len(self.errors) < self.cap:
            self.errors.append(text)

    def fallback(self, item: Fallback | PrecisionFallback) -> None:
        if isinstance(item, PrecisionFallback):
            self.precision_total += 1
            if len(self.precision) < self.cap:
                self.precision.append(item)
        else:
            self.fallbacks_total += 1
            if len(self.fallbacks) < self.cap:
                self.fallbacks.append(item)

    def capped(self) -> bool:
        dropped = (
            self.errors_total - len(self.errors),
            self.fallbacks_total - len(self.fallbacks),
            self.precision_total - len(self.precision),
        )
        return self.cut or max(dropped) > 0


class _Scanner:
    """Per-scan state: the open message, the facts so far and the capped lists."""

    __slots__ = ("facts", "message", "totals")

    def __init__(self, cap: int) -> None:
        self.facts = _Facts()
        self.totals = _Totals(cap)
        self.message: _Message | None = None

    def feed(self, raw: str) -> None:
        raw = _unshipped(raw[:MAX_LINE_CHARS].rstrip())
        line = _split_line(raw)
        if line.text:
            self.facts.observe(line.text)
        if not line.starts:
            if line.text and self.message is not None:
                self.message.add(raw)  # a continuation line keeps its indentation
                self.message.list_open = False
            return
        if self._joins(line):
            assert self.message is not None
            self.message.add(line.text)
            self.message.list_open = (self.message.list_open and line.indented) or (
                line.text.endswith(":")
            )
            return
        self.close()
        self.message = _new_message(line, counted=not self._follow_up(line))

    def _follow_up(self, line: _Line) -> bool:
        return line.severity == "warning" and _WEIGHT_REPORT_RE.match(line.text) is not None

    def _joins(self, line: _Line) -> bool:
        """A tagged line that cannot stand alone continues the message above it."""
        current = self.message
        if current is None or line.severity is None or line.severity != current.severity:
            return False
        return (line.indented and current.list_open) or self._follow_up(line)

    def close(self) -> None:
        message, self.message = self.message, None
        if message is None or message.other:
            return
        totals = self.totals
        if _is_error(message.severity, message.first):
            totals.cut = totals.cut or message.cut
            totals.error(message.text())
            return
        if message.severity == "warning" and message.counted:
            totals.warnings += 1
        if message.first and (item := _classify(message.first, self.facts.enabled)) is not None:
            totals.cut = totals.cut or message.first_cut
            totals.fallback(item)

    def result(self, file: str) -> TrtLog:
        self.close()
        facts, totals = self.facts, self.totals
        return TrtLog(
            file=file,
            trt_version=facts.version,
            gpu=facts.gpu,
            sm=facts.sm,
            fallbacks=tuple(totals.fallbacks),
            precision_fallbacks=tuple(totals.precision),
            errors=tuple(totals.errors),
            warnings=totals.warnings,
            layers=facts.layers,
            fused=facts.fused_count(),
            build_time_s=facts.build_time_s(),
            peak_memory_mib=facts.peak_gpu_mib,
            truncated=totals.capped(),
            fallbacks_total=totals.fallbacks_total,
            precision_fallbacks_total=totals.precision_total,
            errors_total=totals.errors_total,
        )


def _unshipped(raw: str) -> str:
    """The line without the prefixes of what shipped the log."""
    for _ in range(_MAX_SHIPPERS):
        match = _SHIPPER_RE.match(raw)
        if match is None or match.end() == 0:
            break
        raw = raw[match.end() :]
    return raw


def scan_trt_log(lines: Iterable[str], file: str, *, max_items: int = MAX_ITEMS) -> TrtLog:
    """Scan one TensorRT log, line by line (with or without line endings; a ``str`` is split
    into its lines).

    ``max_items`` caps each list; the rest is counted in the ``*_total`` fields and
    ``truncated`` is set. Memory does not grow with the input.
    """
    if max_items < 0:
        raise ValueError("max_items must not be negative")
    if isinstance(lines, str):  # a whole text rather than its lines
        lines = lines.splitlines()
    scanner = _Scanner(max_items)
    for raw in lines:
        scanner.feed(raw)
    return scanner.result(file)
