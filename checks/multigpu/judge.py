"""The `multigpu` check's work: how each rank of the all-reduce ended, and its checked sums.

Verdicts without thresholds: a rank whose sums read wrong is critical for its GPU
(`multigpu.allreduce_wrong`). Ranks that stopped responding: where another rank failed, never
started or was still starting (PyTorch's import, CUDA: the GPUs ran the earlier phases, so a
slow start-up, not a fault) when the phase ended, they were waiting for it, and the check is
UNKNOWN with the reason; where every rank stopped responding in NCCL, the collective itself
hung (one node finding, for no single GPU can be named); where the others finished, the GPU
that hung is named. No NCCL to run (no PyTorch, no CUDA, no NCCL in PyTorch), a failed,
interrupted or missing rank: UNKNOWN with the reason, never a pass.
"""

from __future__ import annotations

from typing import Any

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput, Sources
from sitscheck.contract.phase_record import (
    Entry,
    PhaseRecord,
    applicable,
    count,
    no_gpu_took_part,
    parse_record,
    read_artifact,
)
from sitscheck.models import Finding, Severity
from sitscheck.probes.nccl import STARTING

from .check import RECORD
from .result import nccl_figure

STARTED = ("ok", "hung")


class MultiGpuImpl:
    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        return applicable(sources, RECORD)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        record = read_artifact(ctx, RECORD, parse_record)
        return record if isinstance(record, CheckOutput) else judge(record)


def judge(record: PhaseRecord) -> CheckOutput:
    nccl = (record.result or {}).get("nccl")
    version = nccl.get("nccl_version") if isinstance(nccl, dict) else None
    out = CheckOutput(facts={
        "engine": record.engine,
        "nccl_version": version if isinstance(version, str) else None,
        "gpus": [_gpu(e) for e in record.gpus],
    })  # fmt: skip
    if record.skipped is not None:
        out.not_judged.append(f"multigpu not run: {record.skipped}")
        return out
    out.findings.extend(_wrong_sums(record.gpus))
    out.findings.extend(_hung(record.gpus))
    out.error = _unknown(record, out.findings)
    return out


def _gpu(entry: Entry) -> dict[str, Any]:
    result = entry.result or {}
    rank, wrong = result.get("rank"), result.get("wrong_elements")
    return {
        **entry.identity(),
        "rank": count(rank),
        "status": entry.status,
        "wrong_elements": count(wrong),
    }


def _wrong_sums(entries: list[Entry]) -> list[Finding]:
    found = []
    for entry in entries:
        result = entry.result or {}
        wrong = result.get("wrong_elements")
        if entry.status != "ok" or not count(wrong):
            continue
        raw = result.get("nccl")
        nccl: dict[str, Any] = raw if isinstance(raw, dict) else {}
        found.append(
            Finding(
                code="multigpu.allreduce_wrong",
                severity=Severity.CRITICAL,
                device=entry.device(),
                message=f"GPU {entry.index}: {wrong} element(s) of a checked all-reduce of "
                f"{nccl.get('bytes', '?')} bytes over {nccl.get('ranks', '?')} GPUs read other "
                f"than their sum {result.get('expected_sum', '?')}: silent data corruption "
                "suspected",
            )
        )
    return found


def _hung(entries: list[Entry]) -> list[Finding]:
    hung = [e for e in entries if e.status == "hung"]
    if not hung or any(e.status not in STARTED or _stalled(e) for e in entries):
        return []  # none hung, or they waited for a rank that failed or did not start
    if len(hung) == len(entries):
        return [Finding(code="multigpu.workload_hung", severity=Severity.CRITICAL,
                        message=_all_hung(hung))]  # fmt: skip
    return [
        Finding(
            code="multigpu.workload_hung",
            severity=Severity.CRITICAL,
            device=entry.device(),
            message=f"GPU {entry.index}: its rank of NCCL's all-reduce {entry.reason}, after "
            "the other ranks had finished",
        )
        for entry in hung
    ]


def _stalled(entry: Entry) -> bool:
    """A rank killed at the phase's end before it had PyTorch and CUDA up."""
    return entry.status == "hung" and entry.doing in (None, STARTING)


def _all_hung(hung: list[Entry]) -> str:
    """Every rank stopped responding: the collective, not one GPU, is named; what each rank
    was doing, grouped (a rank that never joined and the ranks that waited for it differ)."""
    doing: dict[str, list[str]] = {}
    for entry in hung:
        doing.setdefault(entry.reason or "stopped responding; killed", []).append(str(entry.index))
    gpus = ", ".join(str(e.index) for e in hung)
    if len(doing) == 1:
        return f"GPUs {gpus}: NCCL's all-reduce over them {next(iter(doing))}"
    each = "; ".join(f"GPU {', '.join(ids)}: {reason}" for reason, ids in doing.items())
    return f"GPUs {gpus}: NCCL's all-reduce over them stopped responding ({each})"


def _unknown(record: PhaseRecord, findings: list[Finding]) -> str | None:
    """Why the check cannot pass, where no finding already says it; None where nothing is
    missing."""
    if not record.gpus:
        return no_gpu_took_part(record)
    failed = [e for e in record.gpus if e.status not in STARTED]
    stalled = [e for e in record.gpus if _stalled(e)]
    if failed or stalled:
        why = [f"GPU {e.index}: {e.status}: {e.reason}" for e in failed]
        why += [f"GPU {e.index}: still starting (PyTorch, CUDA) at the phase's end: killed "
                "(a larger --budget gives it time)" for e in stalled]  # fmt: skip
        waited = [str(e.index) for e in record.gpus if e.status == "hung" and not _stalled(e)]
        if waited:
            why.append(f"GPU(s) {', '.join(waited)} waited for them and were killed at the "
                       "phase's end")  # fmt: skip
        return "; ".join(why)
    if any(f.code == "multigpu.workload_hung" for f in findings):
        return None
    if nccl_figure(record) is not None:
        return None
    reason = (record.result or {}).get("nccl_reason")
    if isinstance(reason, str) and reason:
        return f"NCCL all-reduce not measured: {reason}"
    return "NCCL all-reduce not measured: the record holds no figure of the shape expected"
