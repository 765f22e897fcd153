"""The `compute` check's work: repeats, GPUs of one model and the fp64 tile compared."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput, Sources
from sitscheck.contract.phase_record import (
    Entry,
    PhaseRecord,
    applicable,
    count,
    finite,
    judge_phase,
)
from sitscheck.models import Finding, Metric, Severity

from .check import RECORD


class ComputeImpl:
    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        return applicable(sources, RECORD)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        return judge_phase(ctx, RECORD, "compute.workload_hung", judge)


def judge(record: PhaseRecord, ran: list[Entry]) -> CheckOutput:
    out = CheckOutput(facts={"engine": record.engine, "gpus": []})
    majority = _majority_digests(ran)
    untested: list[str] = []  # never a pass for what did not run: UNKNOWN
    for entry in ran:
        result = entry.result or {}
        mismatched = _whole_numbers(result.get("mismatched"))
        digest = result.get("digest") if isinstance(result.get("digest"), str) else None
        dtype = result.get("dtype")
        shape = _whole_numbers(result.get("shape"))
        peers = [e for e in ran if e.name == entry.name]
        matches = None if len(peers) < 2 or digest is None else digest == majority.get(entry.name)
        facts = {
            **entry.identity(),
            "dtype": dtype if isinstance(dtype, str) else None,
            "shape": shape if shape is not None and len(shape) == 3 else None,
            "repeats": count(result.get("repeats")),
            "mismatched_repeats": mismatched,
            "digest": digest,
            "matches_node": matches,
            "reference_max_rel_error": finite(result.get("reference_max_rel_error")),
            "tflops_median": finite(result.get("tflops_median")),
        }
        out.facts["gpus"].append(facts)
        labels = {"gpu": str(entry.index)}
        if facts["tflops_median"] is not None:
            out.metrics.append(
                Metric(
                    name="sitscheck.accept.compute.tflops",
                    value=facts["tflops_median"],
                    unit="TFLOP/s",
                    labels=labels,
                )
            )
        if mismatched is not None:
            out.metrics.append(
                Metric(
                    name="sitscheck.accept.compute.mismatched_repeats",
                    value=len(mismatched),
                    unit="{repeat}",
                    labels=labels,
                )
            )
        untested.extend(_untested(entry, facts))
        out.findings.extend(_findings(entry, facts, peers, majority))
        tile = _reference(entry, result)
        out.findings.extend(tile)
        if not tile and (facts["reference_max_rel_error"] is None
                         or finite(result.get("reference_tolerance")) is None):  # fmt: skip
            out.not_judged.append(f"GPU {entry.index}: the fp64 tile: no error or tolerance in "
                                  "the record")  # fmt: skip
        if len(peers) < 2:
            out.not_judged.append(f"GPU {entry.index}: digest across GPUs: not applicable (the "
                                  f"only {entry.name or 'GPU'} of the node)")  # fmt: skip
        elif digest is None:
            out.not_judged.append(f"GPU {entry.index}: no digest in the record: not compared "
                                  "with the other GPUs'")  # fmt: skip
    out.error = "; ".join(untested) or None
    return out


def _untested(entry: Entry, facts: dict[str, Any]) -> list[str]:
    """Why the repeats of GPU `entry` were not compared: no count of them, none finished, or
    no list of the ones that differed (what the child compared)."""
    missing = [k for k in ("repeats", "mismatched_repeats") if facts[k] is None]
    if missing:
        return [f"GPU {entry.index}: the record holds no {' or '.join(missing)}: the repeats "
                "not judged"]  # fmt: skip
    if facts["repeats"] < 1:
        return [f"GPU {entry.index}: no repeat of the product finished"]
    return []


def _majority_digests(ran: list[Entry]) -> dict[str | None, str]:
    """Per GPU model, the digest most of its GPUs gave (ties: none is the majority)."""
    by_model: dict[str | None, Counter[str]] = {}
    for entry in ran:
        digest = (entry.result or {}).get("digest")
        if isinstance(digest, str):
            by_model.setdefault(entry.name, Counter())[digest] += 1
    majority: dict[str | None, str] = {}
    for model, counts in by_model.items():
        ranked = counts.most_common(2)
        if len(ranked) == 1 or ranked[0][1] > ranked[1][1]:
            majority[model] = ranked[0][0]
    return majority


def _findings(
    entry: Entry,
    facts: dict[str, Any],
    peers: list[Entry],
    majority: dict[str | None, str],
) -> list[Finding]:
    device = entry.device()
    found: list[Finding] = []
    mismatched = facts["mismatched_repeats"]
    if mismatched:
        found.append(
            Finding(
                code="compute.repeat_mismatch",
                severity=Severity.CRITICAL,
                device=device,
                message=f"GPU {entry.index}: silent data corruption suspected: repeat(s) "
                f"{', '.join(str(r) for r in mismatched[:5])} of "
                f"{_or_unknown(facts['repeats'])} gave other bits than the first",
            )
        )
    if len(peers) >= 2 and facts["digest"] is not None and facts["matches_node"] is not True:
        others = ", ".join(
            f"GPU {p.index} {(p.result or {}).get('digest')}" for p in peers if p is not entry
        )
        why = "differs from" if entry.name in majority else "no majority among"
        found.append(
            Finding(
                code="compute.node_mismatch",
                severity=Severity.CRITICAL,
                device=device,
                message=f"GPU {entry.index}: silent data corruption suspected: digest "
                f"{facts['digest']} {why} the other {entry.name or 'GPU'}s' ({others})",
            )
        )
    return found


def _reference(entry: Entry, result: dict[str, Any]) -> list[Finding]:
    """The fp64 tile: an error beyond bf16's tolerance, or a NaN or infinity (what a product
    holding one gives), is corruption."""
    raw = result.get("reference_max_rel_error")
    tolerance = finite(result.get("reference_tolerance"))
    if not isinstance(raw, float | int) or isinstance(raw, bool) or tolerance is None:
        return []
    if math.isfinite(raw) and raw <= tolerance:
        return []
    off = f"{raw:.4g} off" if math.isfinite(raw) else f"{raw} against"
    return [
        Finding(
            code="compute.reference_error",
            severity=Severity.CRITICAL,
            device=entry.device(),
            message=f"GPU {entry.index}: silent data corruption suspected: a 64×64 tile is "
            f"{off} its fp64 reference (bf16 allows {tolerance:.4g})",
        )
    ]


def _or_unknown(value: int | None) -> str:
    return "?" if value is None else str(value)


def _whole_numbers(value: object) -> list[int] | None:
    """A list of whole numbers from a record (repeat numbers, a shape), its other items
    dropped; None where the record holds no list."""
    if not isinstance(value, list):
        return None
    return [int(v) for v in value if isinstance(v, int) and not isinstance(v, bool)]
