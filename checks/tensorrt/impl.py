"""The work of the `tensorrt` check: build logs (and the optional probe) → facts, findings.

The log parser (~50 patterns compiled at import), the judge and the probe are imported when
there is a log to read or a probe to run: a node with neither (most runs) skips the check
without them.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.gpu.identity import GpuRef, known_gpus
from sitscheck.models import Metric
from sitscheck.sources.base import Sources
from sitscheck.sources.files import open_regular

from .check import TRT_LOGS

if TYPE_CHECKING:
    from .judge import ScannedLog
    from .probe import ProbeOutcome, Spawn

PROBE_MARGIN_S = 1.5
"""Seconds of the check's deadline kept back from the probe's children for reporting."""
REPLAY_PROBE = "the probe builds on live GPUs; it does not run when replaying a bundle"


def bounded_lines(handle: TextIO, limit: int | None = None) -> Iterator[str]:
    """The handle's lines, each cut at ``limit`` characters (`parse.MAX_LINE_CHARS` by
    default): the rest of an overlong line is read and dropped, never held, so a file with
    no line breaks costs ``limit`` characters."""
    if limit is None:
        from .parse import MAX_LINE_CHARS

        limit = MAX_LINE_CHARS
    while chunk := handle.readline(limit):
        yield chunk
        if len(chunk) < limit or chunk.endswith("\n"):
            continue
        while (rest := handle.readline(limit)) and not rest.endswith("\n"):
            pass


def display_name(path: Path, mode: str) -> str:
    """A bundle's log by its path inside the bundle (``tensorrt/x.log``); a live log as given."""
    if mode != "live" and TRT_LOGS.folder in path.parts:
        start = len(path.parts) - 1 - path.parts[::-1].index(TRT_LOGS.folder)
        return "/".join(path.parts[start:])
    return str(path)


def read_log(path: Path, file: str) -> ScannedLog:
    """Scan one log streaming (undecodable bytes replaced); raises OSError when unreadable."""
    from .judge import LogMarks, ScannedLog
    from .parse import scan_trt_log

    marks = LogMarks()

    def lines(handle: TextIO) -> Iterator[str]:
        for line in bounded_lines(handle):
            marks.observe(line)
            yield line

    # never blocks on a FIFO; a folder, FIFO or device under the name is unreadable (named)
    with io.TextIOWrapper(
        open_regular(path), encoding="utf-8", errors="replace", newline=None
    ) as handle:
        log = scan_trt_log(lines(handle), file)
    return ScannedLog(log, file, tuple(marks.gpu_indices), marks.passed)


class TensorrtImpl:
    """The work behind `TensorrtCheck` (imported only when the check runs)."""

    def __init__(self, spawn: Spawn | None = None) -> None:
        self._spawn = spawn

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        if sources.log_files(TRT_LOGS.folder):
            return None
        where = (
            "no TensorRT build logs (--trt-log PATH)"
            if sources.mode == "live"
            else f"no TensorRT build logs in the bundle ({TRT_LOGS.folder}/*.log|*.txt)"
        )
        if not config.trt_probe:
            return f"{where} and no --trt-probe"
        if sources.mode != "live":
            return f"{where}; {REPLAY_PROBE}"
        from .probe import tensorrt_missing

        missing = tensorrt_missing()
        return f"{where}; the probe cannot run: {missing}" if missing else None

    def collect(self, ctx: CheckContext) -> CheckOutput:
        from .judge import gpu_facts, judge_logs, judge_probe

        sources = ctx.sources
        gpus = known_gpus(sources)
        scanned: list[ScannedLog] = []
        unreadable: list[str] = []
        paths = sources.log_files(TRT_LOGS.folder)
        for path in paths:
            ctx.ensure_time(f"reading {path}")
            file = display_name(path, sources.mode)
            try:
                scanned.append(read_log(path, file))
            except OSError as exc:
                unreadable.append(f"{file}: could not be read: {exc.strerror or exc}")
        probe = self._probe(ctx, gpus) if ctx.config.trt_probe else None
        probe_gpus = [gpu.to_fact() for gpu in probe.gpus] if probe is not None else []
        judgement = judge_logs(scanned, gpus)
        not_judged = unreadable + judgement.not_judged
        findings = judgement.findings
        if probe is not None and not probe.ran:
            not_judged.append(f"TensorRT probe: {probe.reason}")
        elif probe is not None:
            probed = judge_probe(probe_gpus, "python -m sitscheck.checks.tensorrt.probe")
            findings = findings + probed.findings
            not_judged.extend(probed.not_judged)
        error = None
        if paths and not scanned and not probe_gpus:
            error = "no TensorRT log could be read: " + "; ".join(unreadable)
        logs = [item.log for item in scanned]
        return CheckOutput(
            findings=findings,
            metrics=[
                Metric(name="sitscheck.trt.logs", value=len(logs), unit="{log}"),
                Metric(
                    name="sitscheck.trt.fallbacks",
                    value=sum(log.fallbacks_total for log in logs),
                    unit="{fallback}",
                ),
                Metric(
                    name="sitscheck.trt.precision_fallbacks",
                    value=sum(log.precision_fallbacks_total for log in logs),
                    unit="{layer}",
                ),
                Metric(
                    name="sitscheck.trt.errors",
                    value=sum(log.errors_total for log in logs),
                    unit="{error}",
                ),
            ],
            facts={
                "logs": [log.to_fact() for log in logs],
                "gpus": gpu_facts(scanned, gpus, probe_gpus),
                "probe": probe.to_fact() if probe is not None else None,
            },
            not_judged=not_judged,
            error=error,
        )

    def _probe(self, ctx: CheckContext, gpus: list[GpuRef]) -> ProbeOutcome:
        from .probe import ProbeOutcome, run_probe, tensorrt_missing

        sources = ctx.sources
        if sources.mode != "live":
            return ProbeOutcome(False, REPLAY_PROBE)
        missing = tensorrt_missing()
        if missing is not None:
            return ProbeOutcome(False, missing)
        driver = sources.driver()
        if driver.state != "present":
            return ProbeOutcome(False, f"no NVIDIA driver to build on: {driver.detail}")
        timeout = ctx.remaining() - PROBE_MARGIN_S
        if timeout <= 0:
            return ProbeOutcome(False, "no time left within the check's deadline")
        return run_probe(gpus, timeout, uuids=_uuids(sources), spawn=self._spawn)


def _uuids(sources: Sources) -> dict[int, str]:
    snapshot, _reason = sources.gpu_snapshot()
    out: dict[int, str] = {}
    for gpu in (snapshot or {}).get("gpus") or []:
        index, uuid = gpu.get("index"), gpu.get("uuid")
        if isinstance(index, int) and isinstance(uuid, str) and uuid:
            out[index] = uuid
    return out
