"""Which TensorRT messages are fallbacks (a slower path than asked), and which are errors.

A DLA layer switched to the GPU, an INT8 implementation dropped for a missing scale, a layer
kept at a higher precision than requested, a skipped tactic or too little workspace: each a
`Fallback` or `PrecisionFallback` read from the first line of a (non-error) message.
"""

from __future__ import annotations

import re

from msgspec import Struct

from .lines import BUILD_FAILED_RE, NO_IMPLEMENTATION_RE, Severity


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


WEIGHT_REPORT_RE = re.compile(
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
RANK = {"FP32": 32, "TF32": 19, "FP16": 16, "BF16": 16, "FP8": 8, "INT8": 8, "INT4": 4, "FP4": 4}
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


def precision_name(token: str) -> str:
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
    limit = RANK[actual]
    for match in _PRECISION_TOKEN_RE.finditer(text):
        name = precision_name(match.group("p"))
        if RANK[name] < limit:
            return name
    lower = [name for name in enabled if RANK[name] < limit]
    return min(lower, key=lambda name: RANK[name]) if lower else None


def _names_higher(text: str, actual: str) -> bool:
    limit = RANK[actual]
    names = (precision_name(m.group("p")) for m in _PRECISION_TOKEN_RE.finditer(text))
    return any(RANK[name] > limit for name in names)


def _higher_precision(text: str, enabled: frozenset[str]) -> PrecisionFallback | None:
    """``running in FP32``-style messages: a layer kept at a higher precision than asked."""
    match = _RUNNING_IN_RE.search(text)
    if match is None or _ADVICE_RE.search(text):
        return None
    actual = precision_name(match.group("to"))
    rest = text[: match.start("to")] + text[match.end("to") :]
    requested = _requested_precision(rest, actual, enabled)
    if requested is None and _names_higher(rest, actual):
        return None  # moved down from a named higher precision: a slower path is not this kind
    return PrecisionFallback(_layer_of(text), requested, actual)


def _slow_path(text: str) -> Fallback | None:
    """Skipped tactics, too little workspace, explicit ``fallback to X``."""
    if NO_IMPLEMENTATION_RE.search(text):
        return None
    if _SKIPPING_TACTIC_RE.search(text) or _NO_WORKSPACE_RE.search(text):
        return Fallback(None, text)
    if _FALLBACK_TO_RE.search(text):
        return Fallback(_layer_of(text), text)
    return None


def classify(text: str, enabled: frozenset[str]) -> Fallback | PrecisionFallback | None:
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


def is_error(severity: Severity | None, first: str) -> bool:
    if severity == "error":
        return True
    return severity is None and bool(
        BUILD_FAILED_RE.search(first) or NO_IMPLEMENTATION_RE.search(first)
    )
