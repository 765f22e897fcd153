"""Facts of a TensorRT log read line by line, whichever message a line belongs to: the
TensorRT version, the GPU and its SM, the precisions the build enabled, layer counts, build
time and peak GPU memory."""

from __future__ import annotations

import re

from msgspec import Struct

from .fallbacks import RANK, precision_name
from .gpu_arch import sm_from_capability

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


class LogFacts(Struct):
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
            names = {precision_name(p.strip()) for p in banner.group("p").split("+")}
            self.enabled = self.enabled | frozenset(names & RANK.keys())
        elif text.startswith("&&&& RUNNING"):
            flags = {m.group("p").upper() for m in _CLI_PRECISION_RE.finditer(text)}
            if "BEST" in flags:
                flags |= {"FP16", "INT8"}
            self.enabled = self.enabled | frozenset(flags & RANK.keys())

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
