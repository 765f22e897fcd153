"""The `memtest` check's work: per GPU, the bad words and the ECC counters around the test."""

from __future__ import annotations

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

GIB = 1 << 30


class MemtestImpl:
    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        return applicable(sources, RECORD)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        return judge_phase(ctx, RECORD, "memtest.workload_hung", judge)


# what the memory test cannot be judged without: a record lacking one is UNKNOWN, never 0
NEEDED = ("bytes_tested", "passes", "bad_words")


def judge(record: PhaseRecord, ran: list[Entry]) -> CheckOutput:
    out = CheckOutput(facts={"engine": record.engine, "gpus": []})
    untested: list[str] = []  # never a pass for what did not run: UNKNOWN
    for entry in ran:
        result = entry.result or {}
        patterns = result.get("patterns")
        facts = {
            **entry.identity(),
            "bytes_tested": count(result.get("bytes_tested")),
            "patterns": [str(p) for p in patterns if isinstance(p, str)]
            if isinstance(patterns, list)
            else None,
            "passes": count(result.get("passes")),
            "bad_words": count(result.get("bad_words")),
            "first_bad": _first_bad(result.get("first_bad")),
            "ecc_before": _ecc(result.get("ecc_before")),
            "ecc_after": _ecc(result.get("ecc_after")),
            "seconds": finite(result.get("seconds")),
        }
        out.facts["gpus"].append(facts)
        labels = {"gpu": str(entry.index)}
        for name, key, unit in (
            ("sitscheck.accept.memtest.bad_words", "bad_words", "{word}"),
            ("sitscheck.accept.memtest.bytes", "bytes_tested", "By"),
        ):
            if facts[key] is not None:
                out.metrics.append(Metric(name=name, value=facts[key], unit=unit, labels=labels))
        out.findings.extend(_findings(entry, facts))
        missing = [key for key in NEEDED if facts[key] is None]
        if missing:
            untested.append(f"GPU {entry.index}: the record holds no {' or '.join(missing)}: "
                            "the memory test not judged")  # fmt: skip
        elif not facts["passes"] or not facts["bytes_tested"]:
            untested.append(f"GPU {entry.index}: the memory test ended before a whole pass")
        if facts["seconds"] is None:
            out.not_judged.append(f"GPU {entry.index}: the test's time is not in the record: "
                                  "its throughput not compared with the other GPUs'")  # fmt: skip
        if facts["ecc_before"] is None or facts["ecc_after"] is None:
            out.not_judged.append(f"GPU {entry.index}: ECC counters not readable (no ECC "
                                  "reporting): only the patterns judged")  # fmt: skip
    out.error = "; ".join(untested) or None
    return out


def _findings(entry: Entry, facts: dict[str, Any]) -> list[Finding]:
    device = entry.device()
    found: list[Finding] = []
    bad = facts["bad_words"]
    if bad:
        first = facts["first_bad"] or {}
        where = (f"; first at 0x{first['address']:x}: expected {first['expected']}, read "
                 f"{first['read']}") if first else ""  # fmt: skip
        tested = facts["bytes_tested"]
        size = f" in {tested / GIB:.1f} GiB" if tested is not None else ""
        found.append(
            Finding(
                code="memtest.bad_words",
                severity=Severity.CRITICAL,
                device=device,
                message=f"GPU {entry.index}: {bad} bad word(s){size}{where}",
            )
        )
    before, after = facts["ecc_before"], facts["ecc_after"]
    if before is None or after is None:
        return found
    new_uncorrected = after["volatile_uncorrected"] - before["volatile_uncorrected"]
    new_corrected = after["volatile_corrected"] - before["volatile_corrected"]
    if new_uncorrected > 0:
        found.append(
            Finding(
                code="memtest.ecc_uncorrected",
                severity=Severity.CRITICAL,
                device=device,
                message=f"GPU {entry.index}: {new_uncorrected} new "
                "uncorrectable ECC error(s) during the memory test",
            )
        )
    if after["remap_failure"]:
        was = before["remap_failure"]
        when = "has failed (before the memory test too)" if was else "failed during the memory test"
        found.append(
            Finding(
                code="memtest.remap_failure",
                severity=Severity.CRITICAL,
                device=device,
                message=f"GPU {entry.index}: row remapping {when}",
            )
        )
    if new_corrected > 0:
        found.append(
            Finding(
                code="memtest.ecc_corrected",
                severity=Severity.WARNING,
                device=device,
                message=f"GPU {entry.index}: {new_corrected} new "
                "corrected ECC error(s) during the memory test",
            )
        )
    return found


ECC_COUNTS = ("volatile_corrected", "volatile_uncorrected", "retired_pages")
ECC_FLAGS = ("remap_pending", "remap_failure")


def _ecc(value: object) -> dict[str, Any] | None:
    """facts.md's ECC record, or None where the record holds none (or not in that shape: a
    counter that is not a count is no reading)."""
    if not isinstance(value, dict):
        return None
    counts = {k: value.get(k) for k in ECC_COUNTS}
    flags = {k: value.get(k) for k in ECC_FLAGS}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()):
        return None
    if not all(isinstance(v, bool) for v in flags.values()):
        return None
    return {**counts, **flags}


def _first_bad(value: object) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    address, expected, read = value.get("address"), value.get("expected"), value.get("read")
    if not isinstance(address, int) or isinstance(address, bool):
        return None
    if not isinstance(expected, str) or not isinstance(read, str):
        return None
    return {"address": address, "expected": expected, "read": read}
