"""Reading an acceptance phase's record (`accept/<phase>.json`), live or from a bundle.

The record says, per GPU, whether the phase's workload ran and how it ended
(`accept.phases`). What did not run is never a pass: a GPU whose workload failed, was
interrupted or never started makes the check UNKNOWN with the reason; one whose workload
stopped responding is a critical finding for that GPU (what it was doing is named).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from msgspec import Struct, field

from ..models import Device, Finding, Severity
from . import CheckContext, CheckOutput, Sources

FORMAT = "sitscheck-accept"
T = TypeVar("T")


class RecordError(ValueError):
    pass


class Entry(Struct, frozen=True):
    """One GPU's part of a phase."""

    index: int
    uuid: str | None
    pci_bus_id: str | None
    name: str | None
    status: str
    reason: str | None
    doing: str | None
    result: dict[str, Any] | None

    def device(self) -> Device:
        return Device(index=self.index, pci_bus_id=self.pci_bus_id, uuid=self.uuid, name=self.name)

    def identity(self) -> dict[str, Any]:
        """facts.md's identity keys of a per-GPU acceptance entry."""
        return {"gpu": self.index, "uuid": self.uuid, "pci_bus_id": self.pci_bus_id}


class PhaseRecord(Struct, frozen=True):
    phase: str
    engine: str | None
    skipped: str | None
    gpus: list[Entry] = field(default_factory=list)
    result: dict[str, Any] | None = None  # a node-level phase's own result (multigpu)
    reason: str | None = None  # why no GPU took part (NVML could not be used), if none did


def parse_record(text: str) -> PhaseRecord:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RecordError(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise RecordError(f"not a {FORMAT} record")
    entries = []
    for raw in data.get("gpus") or []:
        if not isinstance(raw, dict) or not isinstance(raw.get("index"), int):
            raise RecordError("a GPU entry without an index")
        result = raw.get("result")
        entries.append(
            Entry(
                index=raw["index"],
                uuid=_text(raw.get("uuid")),
                pci_bus_id=_text(raw.get("pci_bus_id")),
                name=_text(raw.get("name")),
                status=str(raw.get("status")),
                reason=_text(raw.get("reason")),
                doing=_text(raw.get("doing")),
                result=result if isinstance(result, dict) else None,
            )
        )
    result = data.get("result")
    return PhaseRecord(
        phase=str(data.get("phase")),
        engine=_text(data.get("engine")),
        skipped=_text(data.get("skipped")),
        gpus=entries,
        result=result if isinstance(result, dict) else None,
        reason=_text(data.get("reason")),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


SKIPPED_BY_OPTION = "--skip "


def applicable(sources: Sources, record: str) -> str | None:
    """Live: the record exists only in an acceptance run. Replay: a bundle that holds none was
    recorded by `run` or `collect`, not `accept`. A phase the plan left out is skipped with
    the plan's reason (`--skip memtest`, "not applicable: one GPU")."""
    artifact = sources.artifact(record)
    if artifact.text is not None:
        try:
            skipped = parse_record(artifact.text).skipped
        except RecordError:
            return None  # collect() says what is wrong with it (UNKNOWN)
        return skipped
    if sources.mode == "live" or artifact.absent:
        return f"measured only by `sitscheck accept` ({record})"
    return None  # in the bundle but unreadable: collect() says why (UNKNOWN)


Judge = Callable[[PhaseRecord, list[Entry]], CheckOutput]


def read_artifact(
    ctx: CheckContext, name: str, parse: Callable[[str], T], label: str | None = None
) -> T | CheckOutput:
    """The record `name` the sources hold, read by `parse`; else the check's UNKNOWN output:
    why it is absent (`label`, default the name), or where and how it does not parse."""
    artifact = ctx.sources.artifact(name)
    if artifact.text is None:
        return CheckOutput(error=f"{label or name}: {artifact.reason}")
    try:
        return parse(artifact.text)
    except ValueError as exc:  # each record's RecordError
        return CheckOutput(error=f"{artifact.ref}: {exc}")


def judge_phase(ctx: CheckContext, record_name: str, hung_code: str, judge: Judge) -> CheckOutput:
    """The shared part of every acceptance check: read the record, handle what did not run,
    hand the GPUs that ran to `judge`, and add the hung GPUs' findings and the rest's reasons."""
    record = read_artifact(ctx, record_name, parse_record)
    if isinstance(record, CheckOutput):
        return record
    if record.skipped is not None:
        return CheckOutput(facts={"engine": record.engine, "gpus": []},
                           not_judged=[f"{record.phase} not run: {record.skipped}"])  # fmt: skip
    ran = [e for e in record.gpus if e.status == "ok" and e.result is not None]
    output = judge(record, ran)
    for entry in record.gpus:
        if entry.status == "hung":
            output.findings.append(
                Finding(
                    code=hung_code,
                    severity=Severity.CRITICAL,
                    message=f"GPU {entry.index}: the {record.phase} workload {entry.reason}",
                    device=entry.device(),
                )
            )
    missing = [e for e in record.gpus if e.status not in ("ok", "hung")]
    if missing or not record.gpus:
        why = "; ".join(f"GPU {e.index}: {e.status}: {e.reason}" for e in missing)
        output.error = why or no_gpu_took_part(record)
    return output


def no_gpu_took_part(record: PhaseRecord) -> str:
    """Why a phase that was not left out has no GPU in its record."""
    return f"{record.phase}: no GPU took part ({record.reason or 'NVML saw none to load'})"


def accepted_without(skip_reasons: Sequence[str | None], names: Sequence[str]) -> str | None:
    """The headline's note for phases an operator left out with --skip (live and replayed
    alike: it is read from the checks' skip reasons, which come from the records)."""
    pairs = zip(names, skip_reasons, strict=True)
    left = [n for n, why in pairs if why and why.startswith(SKIPPED_BY_OPTION)]
    return "accepted without " + " and ".join(left) if left else None


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Nearest-rank percentile (fraction 0..1) of `values`, or None for none."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(int(-(-fraction * len(ordered) // 1)), 1)
    return ordered[min(rank, len(ordered)) - 1]


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def count(value: object, least: int = 0) -> int | None:
    """A record's count (bytes, passes, repeats, words, a rank) as an int, or None where it is
    none: null, text, a bool, a float or a number below `least`. Never 0 for a count not given
    (facts.md: a figure that could not be measured is null)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= least:
        return value
    return None


def finite(value: object) -> float | None:
    """A record's number as a float, or None where it is none: null, text, a bool, NaN or an
    infinity (JSON from a child or a bundle may hold any of them; a fact is a number or null)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None
