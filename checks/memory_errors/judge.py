"""Pure: ECC, row-remapping and retired-page facts, metrics and findings from the GPU views."""

from __future__ import annotations

from typing import Any

from sitscheck.contract import CheckOutput
from sitscheck.gpu.judging import FleetCheck, judge_each
from sitscheck.gpu.readings import number
from sitscheck.gpu.view import GpuFleet, GpuView
from sitscheck.models import Finding, Severity

READ_KEYS = ("ecc", "remap", "retired_pages")
RESET_ACTION = (
    "drain the GPU and reset it (nvidia-smi -r, or reboot the node) so the pending remap or "
    "retirement takes effect; it is healthy again once the counters show nothing pending"
)
INSPECT_ACTION = (
    "take the GPU out of service: its memory ran out of spare rows; open a hardware "
    "inspection/RMA with the remap counters and the kernel log's Xid 63/64 lines"
)


def judge(fleet: GpuFleet) -> CheckOutput:
    return judge_each(fleet, "memory errors", "ecc", READ_KEYS, _gpu)


def _gpu(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    _ecc(gpu, entry, out)
    _remap(gpu, entry, out)
    _retired(gpu, entry, out)


def _ecc(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    enabled = gpu.get("ecc", "mode_enabled")
    if isinstance(enabled, bool):
        entry["ecc_enabled"] = enabled
        if not enabled:
            out.not_judged.append(f"GPU {gpu.index}: ECC is disabled: memory errors go uncounted")
    for scope in ("volatile", "aggregate"):
        for kind in ("corrected", "uncorrected"):
            value = number(gpu.get("ecc", scope, kind))
            if value is None:
                out.not_judged.append(
                    f"GPU {gpu.index}: ECC {scope} {kind} count: "
                    f"{gpu.why_missing(f'ecc.{scope}.{kind}')}"
                )
                continue
            entry[f"ecc_{scope}_{kind}"] = int(value)
            out.metrics.append(
                gpu.metric(
                    "hw.errors",
                    value,
                    "{error}",
                    **{"error.type": f"ecc_{kind}", "hw.type": "gpu", "ecc.scope": scope},
                )
            )


def _remap(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    remap = gpu.get("remap")
    if not isinstance(remap, dict) or all(v is None for v in remap.values()):
        out.not_judged.append(f"GPU {gpu.index}: row remapping: {gpu.why_missing('remap')}")
        return
    for kind in ("corrected", "uncorrected"):
        value = number(remap.get(kind))
        if value is not None:
            entry[f"remap_{kind}"] = int(value)
            out.metrics.append(
                gpu.metric("sitscheck.gpu.memory.remapped_rows", value, "{row}", kind=kind)
            )
    pending, failure = remap.get("pending"), remap.get("failure")
    histogram = remap.get("histogram")
    if isinstance(histogram, dict):
        entry["remap_histogram"] = {
            k: int(v) for k, v in histogram.items() if number(v) is not None
        }
    for name, value in (("pending", pending), ("failure", failure)):
        if isinstance(value, bool):
            entry[f"remap_{name}"] = value
            out.metrics.append(gpu.metric(f"sitscheck.gpu.memory.remap_{name}", float(value), "1"))
        else:
            out.not_judged.append(f"GPU {gpu.index}: row remap {name}: {gpu.why_missing('remap')}")
    counts = f"{entry.get('remap_corrected', '?')} corrected, "
    counts += f"{entry.get('remap_uncorrected', '?')} uncorrected rows remapped"
    if pending is True:
        out.findings.append(
            Finding(
                code="memory_errors.remap_pending",
                severity=Severity.WARNING,
                message=(
                    f"GPU {gpu.index}: a row remap is pending ({counts}): "
                    "the GPU needs a reset to take the failing memory row out of use"
                ),
                device=gpu.device(),
                evidence=[gpu.evidence("remap", f"pending=yes; {counts}")],
                action=RESET_ACTION,
            )
        )
    if failure is True:
        out.findings.append(
            Finding(
                code="memory_errors.remap_failure",
                severity=Severity.CRITICAL,
                message=(
                    f"GPU {gpu.index}: row remapping failed ({counts}): a failing row could "
                    "not be replaced"
                ),
                device=gpu.device(),
                evidence=[gpu.evidence("remap", f"failure=yes; {counts}")],
                action=INSPECT_ACTION,
            )
        )


def _retired(gpu: GpuView, entry: dict[str, Any], out: CheckOutput) -> None:
    retired = gpu.get("retired_pages")
    if not isinstance(retired, dict) or all(v is None for v in retired.values()):
        why = gpu.why_missing("retired_pages")
        if "remap_pending" in entry:
            why += " (row remapping replaces page retirement on this GPU)"
        out.not_judged.append(f"GPU {gpu.index}: retired pages: {why}")
        return
    for cause in ("sbe", "dbe"):
        value = number(retired.get(cause))
        if value is not None:
            entry[f"retired_{cause}"] = int(value)
            out.metrics.append(
                gpu.metric("sitscheck.gpu.memory.retired_pages", value, "{page}", cause=cause)
            )
    pending = retired.get("pending")
    if isinstance(pending, bool):
        entry["retired_pending"] = pending
    if pending is True:
        out.findings.append(
            Finding(
                code="memory_errors.retired_pages_pending",
                severity=Severity.WARNING,
                message=(
                    f"GPU {gpu.index}: a page retirement is pending "
                    f"({entry.get('retired_sbe', '?')} single-bit, "
                    f"{entry.get('retired_dbe', '?')} double-bit pages retired): "
                    "the GPU needs a reset"
                ),
                device=gpu.device(),
                evidence=[gpu.evidence("retired_pages.pending", "pending=yes")],
                action=RESET_ACTION,
            )
        )


# What the `memory_errors` check runs (see `sitscheck.check.LazyCheck`).
WORK = FleetCheck(judge)
