"""Pure: scanned TensorRT logs (and probe builds) → findings and per-GPU facts. No I/O.

Each log is judged on its own (fallbacks, precision fallbacks, errors, a log that contradicts
itself about the GPU it was built on) and against the node's GPUs: an engine plan runs only on
the GPU model and compute capability it was built for. A log that names "GPU N" applies to the
node's GPU N; any other log applies to every GPU of the node.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from msgspec import Struct, field
from sitscheck.gpu.identity import GpuRef
from sitscheck.models import Device, Evidence, Finding, Severity

from .gpu_arch import GpuModel, lookup_gpu, same_gpu_model
from .parse import TrtLog

__all__ = [
    "Judgement",
    "LogMarks",
    "ScannedLog",
    "applies_to",
    "engine_mismatch",
    "gpu_facts",
    "judge_logs",
    "judge_probe",
]

EVIDENCE_SOURCE = "TensorRT log"
_NAMES_SHOWN = 6
_EXCERPT_ITEMS = 5
_EXCERPT_CHARS = 300


# --------------------------------------------------------------------------- marks


# What a log says beside the scanner's facts: which of the node's GPUs it names, and whether the
# build reported success. Patterns are deliberately narrow: "now: CPU 24, GPU 537 (MiB)" is a
# memory figure, not GPU 537.
_GPU_INDEX_RES = (
    re.compile(r"\b(?:for|on|using) GPU (?P<n>\d{1,3})\b(?! ?\(?MiB)"),
    re.compile(r"\bSelected Device ID: (?P<n>\d{1,3})\b"),
    re.compile(r"\btrtexec\b.*?\s--device[= ](?P<n>\d{1,3})\b"),
    re.compile(r"(?:^|\]\s+)Device: (?P<n>\d{1,3})\s*$"),
    re.compile(r"\bgpu_id=(?P<n>\d{1,3})\b"),
)
_PASSED_RE = re.compile(r"&&&& PASSED\b")
# Errors that mean no engine came out, whatever else the log printed.
_BUILD_FAILED_RE = re.compile(
    r"&&&& FAILED|build serialized network failed|Could not find any implementation"
    r"|engine could not be created|Unable to (?:build|create) (?:the )?engine"
    r"|(?:engine )?build(?:ing)? (?:the )?engine failed|failed to build (?:the )?engine",
    re.IGNORECASE,
)


class LogMarks(Struct):
    """Reads lines beside ``scan_trt_log``: the GPU indices a log names and a success marker.

    Memory is constant: only a small set of indices and a flag are kept.
    """

    gpu_indices: list[int] = field(default_factory=list)
    passed: bool = False

    def observe(self, line: str) -> None:
        if "GPU " in line or "evice" in line or "gpu_id=" in line:
            for pattern in _GPU_INDEX_RES:
                match = pattern.search(line)
                if match is not None:
                    index = int(match.group("n"))
                    if index not in self.gpu_indices and len(self.gpu_indices) < 64:
                        self.gpu_indices.append(index)
                    break
        if "&&&& PASSED" in line and _PASSED_RE.search(line):
            self.passed = True


class ScannedLog(Struct, frozen=True):
    """One log as the check read it: the scanner's result, where it came from, its marks."""

    log: TrtLog
    ref: str
    gpu_indices: tuple[int, ...] = ()
    passed: bool = False

    @property
    def succeeded(self) -> bool:
        """The build reported that it finished (trtexec PASSED, or a build time was printed)."""
        return self.passed or self.log.build_time_s is not None


# --------------------------------------------------------------------------- GPU matching


def applies_to(scanned: ScannedLog, gpus: Sequence[GpuRef]) -> list[GpuRef]:
    """The node's GPUs a log applies to: those it names by index, else (none named, or none
    of the named ones on this node) every GPU."""
    named = [gpu for gpu in gpus if gpu.index in scanned.gpu_indices]
    return named or list(gpus)


def _model(name: str | None) -> GpuModel | None:
    return lookup_gpu(name) if name else None


def engine_mismatch(log: TrtLog, gpu: GpuRef) -> bool | None:
    """Whether the engine the log built targets another GPU model or compute capability than
    ``gpu``; None when the log names neither or the GPU's model is unknown."""
    node = _model(gpu.name)
    if node is None:
        return None
    answers: list[bool] = []
    built = _model(log.gpu)
    if built is not None:
        answers.append(same_gpu_model(log.gpu, gpu.name) is False or built.sm != node.sm)
    if log.sm is not None:
        answers.append(log.sm != node.sm)
    return any(answers) if answers else None


def _built_on(log: TrtLog) -> str:
    """How the log names its build target: `A100-PCIE-40GB (sm_80; the log also says sm_86)`."""
    built = _model(log.gpu)
    if log.gpu is None:
        return log.sm or "an unnamed GPU"
    sms = [sm for sm in (built.sm if built else None, log.sm) if sm is not None]
    if not sms:
        return log.gpu
    if len(sms) == 2 and sms[0] != sms[1]:
        return f"{log.gpu} ({sms[0]}; the log also says {sms[1]})"
    return f"{log.gpu} ({sms[0]})"


def _gpu_label(gpu: GpuRef) -> str:
    model = _model(gpu.name)
    sm = f", {model.sm}" if model is not None else ""
    return f"GPU {gpu.index} ({gpu.name or 'unnamed'}{sm})"


def _device(gpus: Sequence[GpuRef]) -> Device | None:
    if len(gpus) != 1:
        return None
    gpu = gpus[0]
    return Device(index=gpu.index, pci_bus_id=gpu.pci_bus_id, name=gpu.name)


# --------------------------------------------------------------------------- findings


class Judgement(Struct):
    """The findings of the logs judged so far, and what could not be judged."""

    findings: list[Finding] = field(default_factory=list)
    not_judged: list[str] = field(default_factory=list)


def judge_logs(logs: Sequence[ScannedLog], gpus: Sequence[GpuRef]) -> Judgement:
    """Every log's findings, in log order; what could not be judged, with why."""
    out = Judgement()
    silent: list[str] = []
    for scanned in logs:
        targets = applies_to(scanned, gpus)
        out.findings.extend(_inconsistent(scanned, targets))
        mismatch, unknown = _mismatch(scanned, targets)
        if mismatch is not None:
            out.findings.append(mismatch)
        if unknown is not None:
            if unknown == "":
                silent.append(scanned.log.file)
            else:
                out.not_judged.append(unknown)
        out.findings.extend(_fallbacks(scanned, targets))
        out.findings.extend(_failures(scanned, targets))
    if silent:
        shown = ", ".join(silent[:_NAMES_SHOWN]) + (
            f" and {len(silent) - _NAMES_SHOWN} more" if len(silent) > _NAMES_SHOWN else ""
        )
        out.not_judged.append(
            f"engine built for this node's GPUs: not judged for {len(silent)} "
            f"log{'s' if len(silent) != 1 else ''} that name no GPU model or compute "
            f"capability ({shown})"
        )
    return out


def _evidence(scanned: ScannedLog, lines: Iterable[str]) -> list[Evidence]:
    rows = [line[:_EXCERPT_CHARS] for line in lines]
    return [Evidence(source=EVIDENCE_SOURCE, ref=scanned.ref, excerpt="\n".join(rows) or None)]


def _inconsistent(scanned: ScannedLog, targets: Sequence[GpuRef]) -> list[Finding]:
    """The log's own GPU and compute capability disagree (an A100 is sm_80, not SM_86)."""
    log = scanned.log
    built = _model(log.gpu)
    if built is None or log.sm is None or built.sm == log.sm:
        return []
    return [
        Finding(
            code="tensorrt.built_on_inconsistent",
            severity=Severity.WARNING,
            message=(
                f"{log.file}: the log says the engine was built for {log.gpu} ({built.sm}) but "
                f"also reports {log.sm.upper()}: the engine is being built or run for a "
                "different GPU than it names"
            ),
            device=_device(targets),
            evidence=_evidence(scanned, [f"built for: {log.gpu}", f"compute: {log.sm}"]),
            action=(
                "find out which GPU the engine really targets; build it on the GPU model "
                "that runs it"
            ),
        )
    ]


def _mismatch(scanned: ScannedLog, targets: Sequence[GpuRef]) -> tuple[Finding | None, str | None]:
    """(the node-mismatch finding, why it could not be judged: "" = the log names no GPU)."""
    log = scanned.log
    if log.gpu is None and log.sm is None:
        return None, ""
    answers = [(gpu, engine_mismatch(log, gpu)) for gpu in targets]
    wrong = [gpu for gpu, answer in answers if answer is True]
    unknown = [gpu for gpu, answer in answers if answer is None]
    why = None
    if unknown:
        what = ", ".join(str(gpu.index) for gpu in unknown)
        why = (
            f"{log.file}: engine built on {_built_on(log)}: not compared with GPU {what}: "
            "the GPU model (or the log's) is not known"
        )
    if not targets:
        why = f"{log.file}: engine built on {_built_on(log)}: this node's GPUs are not known"
    if not wrong:
        return None, why
    models = sorted({gpu.name or "unnamed" for gpu in wrong})
    finding = Finding(
        code="tensorrt.engine_mismatch",
        severity=Severity.CRITICAL,
        message=(
            f"{log.file}: the engine was built on {_built_on(log)} but "
            + ", ".join(_gpu_label(gpu) for gpu in wrong)
            + " of this node "
            + ("is" if len(wrong) == 1 else "are")
            + " another GPU model: a TensorRT plan runs only on the GPU model and compute "
            "capability it was built for"
        ),
        device=_device(wrong),
        evidence=_evidence(
            scanned,
            [f"built for: {log.gpu or '-'}", f"compute: {log.sm or '-'}"]
            + [f"node: {_gpu_label(gpu)}" for gpu in wrong[:_EXCERPT_ITEMS]],
        ),
        action=f"rebuild the engine on this node's GPU model ({', '.join(models)}) and deploy it",
    )
    return finding, why


def _names(names: Iterable[str | None]) -> tuple[list[str], int]:
    unique = list(dict.fromkeys(name for name in names if name))
    return unique[:_NAMES_SHOWN], max(len(unique) - _NAMES_SHOWN, 0)


def _listing(shown: list[str], more: int) -> str:
    return ", ".join(shown) + (f" and {more} more" if more else "")


def _fallbacks(scanned: ScannedLog, targets: Sequence[GpuRef]) -> list[Finding]:
    log = scanned.log
    out = []
    if log.fallbacks_total:
        shown, more = _names(item.layer for item in log.fallbacks)
        unnamed = sum(1 for item in log.fallbacks if item.layer is None)
        parts = []
        if shown:
            parts.append(f"layers {_listing(shown, more)}")
        if unnamed:
            parts.append(f"{unnamed} with no layer named")
        count = log.fallbacks_total
        out.append(
            Finding(
                code="tensorrt.fallback",
                severity=Severity.WARNING,
                message=(
                    f"{log.file}: {count} fallback{'s' if count != 1 else ''} to a slower "
                    f"path ({'; '.join(parts)}): {log.fallbacks[0].reason[:200]}"
                    if log.fallbacks
                    else f"{log.file}: {count} fallbacks to a slower path"
                ),
                device=_device(targets),
                evidence=_evidence(
                    scanned,
                    (
                        f"{item.layer or '-'}: {item.reason}"
                        for item in log.fallbacks[:_EXCERPT_ITEMS]
                    ),
                ),
                action=(
                    "check the named layers: give the builder enough workspace "
                    "(--memPoolSize / setMemoryPoolLimit), use ops and precisions this GPU "
                    "supports, build on the GPU model that runs the engine; then compare SM "
                    "utilisation under load"
                ),
            )
        )
    if log.precision_fallbacks_total:
        items = log.precision_fallbacks
        shown = [
            f"{item.layer or 'a layer'} ({item.requested or '?'}→{item.actual})"
            for item in items[:_NAMES_SHOWN]
        ]
        more = log.precision_fallbacks_total - len(shown)
        count = log.precision_fallbacks_total
        out.append(
            Finding(
                code="tensorrt.precision_fallback",
                severity=Severity.WARNING,
                message=(
                    f"{log.file}: {count} layer{'s' if count != 1 else ''} kept at a higher "
                    f"precision than asked: {_listing(shown, more)}"
                ),
                device=_device(targets),
                evidence=_evidence(
                    scanned,
                    (
                        f"{item.layer or '-'}: {item.requested or '?'} -> {item.actual}"
                        for item in items[:_EXCERPT_ITEMS]
                    ),
                ),
                action=(
                    "calibrate or set dynamic ranges for the named tensors (INT8), or enable "
                    "the precision the layer needs; until then these layers run slower"
                ),
            )
        )
    return out


def _failures(scanned: ScannedLog, targets: Sequence[GpuRef]) -> list[Finding]:
    log = scanned.log
    if not log.errors_total:
        return []
    count = log.errors_total
    first = (log.errors[0].splitlines() or [""])[0][:200] if log.errors else ""
    failed = not scanned.succeeded or any(_BUILD_FAILED_RE.search(e) for e in log.errors)
    evidence = _evidence(scanned, log.errors[:_EXCERPT_ITEMS])
    noun = f"{count} error{'s' if count != 1 else ''}"
    if failed:
        return [
            Finding(
                code="tensorrt.build_failed",
                severity=Severity.CRITICAL,
                message=f"{log.file}: the TensorRT build failed ({noun}); first: {first}",
                device=_device(targets),
                evidence=evidence,
                action=(
                    "fix the first error (an unsupported op needs a plugin or another opset; "
                    "'no implementation' needs more workspace or another precision), then "
                    "rebuild the engine"
                ),
            )
        ]
    return [
        Finding(
            code="tensorrt.build_errors",
            severity=Severity.WARNING,
            message=f"{log.file}: the build finished but logged {noun}; first: {first}",
            device=_device(targets),
            evidence=evidence,
            action="read the errors: the engine may lack what they name; rebuild once fixed",
        )
    ]


# --------------------------------------------------------------------------- probe


def judge_probe(gpus: Sequence[dict[str, Any]], ref: str) -> Judgement:
    """Findings from the ``--trt-probe`` builds (``ProbeOutcome.to_fact()["gpus"]``): a build
    that failed is critical for its GPU; one that timed out or did not run is not judged."""
    out = Judgement()
    for entry in gpus:
        status = entry.get("status")
        index = entry.get("index")
        if status == "failed":
            log = entry.get("log") or {}
            errors = [str(e) for e in log.get("errors") or []]
            out.findings.append(
                Finding(
                    code="tensorrt.probe_failed",
                    severity=Severity.CRITICAL,
                    message=(
                        f"TensorRT could not build a one-layer network on GPU {index}: "
                        f"{entry.get('reason') or 'no engine was produced'}"
                    ),
                    device=Device(
                        index=index if isinstance(index, int) else None,
                        pci_bus_id=entry.get("pci_bus_id"),
                        name=entry.get("name"),
                    ),
                    evidence=[
                        Evidence(
                            source="TensorRT probe",
                            ref=ref,
                            excerpt="\n".join(e[:_EXCERPT_CHARS] for e in errors[:_EXCERPT_ITEMS])
                            or None,
                        )
                    ],
                    action=(
                        "check the CUDA/TensorRT install against the driver (versions, "
                        "libraries), then the GPU (kernel log for Xid, nvidia-smi -q)"
                    ),
                )
            )
        elif status != "built":
            out.not_judged.append(
                f"TensorRT probe on GPU {index}: {entry.get('reason') or status or 'no result'}"
            )
    return out


# --------------------------------------------------------------------------- per-GPU facts


def gpu_facts(
    logs: Sequence[ScannedLog],
    gpus: Sequence[GpuRef],
    probe: Sequence[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """One entry per GPU of the node, joined by the rules engine as ``gpu.tensorrt``.

    ``fallbacks``/``precision_fallbacks``: counts over the logs that apply to the GPU;
    ``engine_mismatch``: true/false where some log applying to it names the GPU it was built
    on, null where none does (or the GPU's model is unknown); ``logs``: those logs' files;
    ``probe_built``: the probe's build on this GPU (null when the probe did not run there).
    """
    probe_by_index = {entry.get("index"): entry for entry in probe}
    out = []
    for gpu in gpus:
        mine = [scanned for scanned in logs if gpu in applies_to(scanned, gpus)]
        answers = [engine_mismatch(scanned.log, gpu) for scanned in mine]
        known = [answer for answer in answers if answer is not None]
        entry = probe_by_index.get(gpu.index)
        status = entry.get("status") if entry else None
        out.append(
            {
                "index": gpu.index,
                "pci_bus_id": gpu.pci_bus_id,
                "name": gpu.name,
                "fallbacks": sum(scanned.log.fallbacks_total for scanned in mine),
                "precision_fallbacks": sum(
                    scanned.log.precision_fallbacks_total for scanned in mine
                ),
                "engine_mismatch": any(known) if known else None,
                "logs": [scanned.log.file for scanned in mine],
                "probe_built": status == "built" if status in ("built", "failed") else None,
            }
        )
    return out
