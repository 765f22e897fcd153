"""Pure, streaming scanner for TensorRT build logs. No I/O: it is given lines.

Reads ``trtexec`` output (``[I]``/``[W]``/``[E]``/``[V]``/``[F]``, with or without one or more
stacked ``[08/29/2024-10:12:01]`` timestamps, the ``&&&& RUNNING/PASSED/FAILED`` status lines),
TensorRT loggers through Python/C++ (``[TRT] [W]``, ``[TensorRT] WARNING:``, ``[TRT-LLM] [I]``,
``[TensorRT-LLM][ERROR]``, DeepStream's ``WARNING: [TRT]:``), TensorRT-LLM build output, TRT
7/8/10 wording and ``[INFO]``/``[WARNING]``/``[ERROR]`` tags.

Logs as they are shipped: the prefixes of whatever carried the log are stripped first, like
timestamps (docker-compose ``face_1  | ``, ``kubectl logs --prefix``'s ``[pod/NAME/CONTAINER]``,
docker/kubectl ``--timestamps``, a Talos node's ``10.5.0.2: ``, journald's ``Mar 29 15:38:59
host python3[1234]: ``, torchrun's ``[rank0]: ``, and ONNX Runtime's ``[W:onnxruntime:<logger>,
tensorrt_execution_provider.h:NN log] `` before TensorRT's own ``[<date> WARNING]``, also behind
Triton's onnxruntime backend). Lines of other programs in the same stream (a
Python traceback or warning, Python ``logging``'s ``INFO:root:``, vLLM's ``INFO 05-21 10:00:00``,
a shell prompt, ONNX Runtime's lines that are not TensorRT's) start a message of their own that
is neither a warning nor an error, so that neither they nor their continuation lines join a
TensorRT message.

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

The parts: `lines.py` reads a line (prefixes, where a message starts, its severity),
`fallbacks.py` tells which messages are fallbacks or errors, `log_facts.py` reads the facts of
single lines (version, GPU, precisions, layers, build time, memory); this module holds each
message together and counts what it is.
"""

from __future__ import annotations

from collections.abc import Iterable

from msgspec import Struct, field

from .fallbacks import WEIGHT_REPORT_RE, Fallback, PrecisionFallback, classify, is_error
from .lines import Line, Severity, read_line, unshipped
from .log_facts import LogFacts

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


# --------------------------------------------------------------------------- results


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


def _new_message(line: Line, counted: bool) -> _Message:
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
        self.facts = LogFacts()
        self.totals = _Totals(cap)
        self.message: _Message | None = None

    def feed(self, raw: str) -> None:
        raw = unshipped(raw[:MAX_LINE_CHARS].rstrip())
        line = read_line(raw)
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

    def _follow_up(self, line: Line) -> bool:
        return line.severity == "warning" and WEIGHT_REPORT_RE.match(line.text) is not None

    def _joins(self, line: Line) -> bool:
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
        if is_error(message.severity, message.first):
            totals.cut = totals.cut or message.cut
            totals.error(message.text())
            return
        if message.severity == "warning" and message.counted:
            totals.warnings += 1
        if message.first and (item := classify(message.first, self.facts.enabled)) is not None:
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
