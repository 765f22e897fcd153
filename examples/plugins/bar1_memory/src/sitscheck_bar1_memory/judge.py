"""Pure: each GPU's BAR1 reading (declared in `check.py`) → the check's facts, findings and
metrics. A reading NVML did not give is never a number: a GPU that does not support it is not
judged (noted), a read that failed or a bundle that lacks it makes the check UNKNOWN."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from sitscheck.contract import CheckOutput, NvmlGpu, NvmlReadings, NvmlValue
from sitscheck.models import Evidence, Finding, Metric, Severity

from .check import BAR1
from .codes import EXHAUSTED
from .facts import Bar1Facts, Bar1Gpu

USED_METRIC = "sitscheck.bar1_memory.used"
TOTAL_METRIC = "sitscheck.bar1_memory.total"
FIELDS = ("bar1Total", "bar1Free", "bar1Used")  # nvmlBAR1Memory_t, bytes
MIB = 1 << 20
_SHOWN_ERRORS = 3


def judge(readings: NvmlReadings) -> CheckOutput:
    """Facts for every GPU; a finding for each full aperture; the failed reads as the error."""
    out = CheckOutput()
    gpus: list[Bar1Gpu] = []
    errors: list[str] = []
    for gpu in readings.gpus:
        reading = gpu.reading(BAR1.key)
        entry = _identity(gpu, reading.state)
        gpus.append(entry)
        if gpu.lost is not None:
            out.not_judged.append(
                f"GPU {gpu.index}: BAR1 not judged: the GPU does not answer ({gpu.lost})"
            )
            continue
        if not reading.ok:
            missing = f"GPU {gpu.index}: BAR1: {reading.why()}"
            (errors if _unknown(reading) else out.not_judged).append(missing)
            continue
        bar1 = shape(reading.value)
        if bar1 is None:
            entry.state = "error"
            errors.append(f"GPU {gpu.index}: BAR1: {readings.ref} holds no reading of its shape")
            continue
        _judge_one(gpu, entry, bar1, readings.ref, out)
    if not readings.gpus:
        errors.append(f"{readings.ref}: NVML lists no GPU")
    out.facts = msgspec.to_builtins(Bar1Facts(source=readings.ref, gpus=gpus))
    if errors:
        more = len(errors) - _SHOWN_ERRORS
        out.error = "; ".join(errors[:_SHOWN_ERRORS]) + (f" (and {more} more)" if more > 0 else "")
    return out


def shape(value: Any) -> tuple[int, int, int] | None:
    """(total, free, used) bytes of a recorded nvmlBAR1Memory_t; None for anything else (a
    bundle holds whatever its writer put there)."""
    if not isinstance(value, Mapping):
        return None
    numbers = [value.get(name) for name in FIELDS]
    counts = [n for n in numbers if isinstance(n, int) and not isinstance(n, bool) and n >= 0]
    if len(counts) != len(FIELDS):
        return None
    total, free, used = counts
    return (total, free, used) if used <= total and free <= total else None


def _unknown(reading: NvmlValue) -> bool:
    """A read that failed, or evidence that lacks it: the check cannot decide."""
    return reading.failed or reading.state == "not_recorded"


def _identity(gpu: NvmlGpu, state: str) -> Bar1Gpu:
    return Bar1Gpu(
        index=gpu.index, pci_bus_id=gpu.pci_bus_id, uuid=gpu.uuid, name=gpu.name, state=state
    )


def _judge_one(
    gpu: NvmlGpu, entry: Bar1Gpu, bar1: tuple[int, int, int], ref: str, out: CheckOutput
) -> None:
    total, free, used = bar1
    entry.total_bytes, entry.free_bytes, entry.used_bytes = total, free, used
    entry.total_mib, entry.used_mib = total // MIB, used // MIB
    entry.used_percent = round(100.0 * used / total, 1) if total else None
    out.metrics.append(Metric(name=USED_METRIC, value=used, unit="By", labels=gpu.labels()))
    out.metrics.append(Metric(name=TOTAL_METRIC, value=total, unit="By", labels=gpu.labels()))
    if total and not free:
        out.findings.append(
            Finding(
                code=EXHAUSTED,
                severity=Severity.WARNING,
                message=(
                    f"GPU {gpu.index}: BAR1 aperture full: {used // MIB} of {total // MIB} MiB "
                    "mapped, none free: new GPUDirect RDMA registrations of its memory fail"
                ),
                device=gpu.device(),
                evidence=[
                    Evidence(
                        source=ref,
                        ref=BAR1.function,
                        excerpt=", ".join(f"{n}={v}" for n, v in zip(FIELDS, bar1, strict=True)),
                    )
                ],
            )
        )
