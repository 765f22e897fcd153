"""What the GPU checks (pcie_link, gpu_telemetry, memory_errors, nvlink) share:
`skip_unless_driver` (their `applicable`), `collect_with` (their `collect`), `judge_each` (the
per-GPU loop: facts `{source, ref, gpus: [...]}`, a lost GPU not judged, failed reads → error)
and `FleetCheck`, the work of a check that judges the fleet view."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from msgspec import Struct

from ..contract import CheckContext, CheckOutput
from ..sources.base import Sources
from .fleet import load
from .notes import group_notes
from .view import GpuFleet, GpuView

PerGpu = Callable[[GpuView, dict[str, Any], CheckOutput], None]


def skip_unless_driver(sources: Sources) -> str | None:
    """A GPU check's `applicable`: it runs wherever the driver is present."""
    driver = sources.driver()
    return None if driver.state == "present" else driver.detail


def judge_each(
    fleet: GpuFleet, what: str, key: str, read_keys: Sequence[str], per_gpu: PerGpu
) -> CheckOutput:
    """Run `per_gpu(gpu, facts entry, output)` for every GPU that answers; a lost GPU gets its
    identity and a not-judged note (the driver check reports it). The facts are
    `{source, ref, gpus: [...]}`; failed reads under `read_keys` make the output's error."""
    out = CheckOutput(not_judged=[*fleet.problems, *fleet.unread])
    gpus: list[dict[str, Any]] = []
    for gpu in fleet.gpus:
        entry = gpu.identity()
        gpus.append(entry)
        if gpu.lost is not None:
            entry["lost"] = True
            out.not_judged.append(f"GPU {gpu.index}: {what}: {gpu.why_missing(key)}")
            continue
        per_gpu(gpu, entry, out)
    out.facts = {"source": fleet.source, "ref": fleet.ref, "gpus": gpus}
    out.error = fleet.fault_error(read_keys)
    out.not_judged = group_notes(out.not_judged)
    return out


def collect_with(sources: Sources, judge: Callable[[GpuFleet], CheckOutput]) -> CheckOutput:
    """A GPU check's `collect`: the fleet from the sources, judged; UNKNOWN without one."""
    fleet = load(sources)
    if isinstance(fleet, str):
        return CheckOutput(error=fleet)
    if not fleet.has_readings:
        return CheckOutput(error=fleet.no_readings())
    return judge(fleet)


class FleetCheck(Struct, frozen=True):
    """The work of a GPU check that judges the fleet view: it runs wherever the driver is."""

    judge: Callable[[GpuFleet], CheckOutput]

    def applicable(self, sources: Sources, config: object) -> str | None:
        return skip_unless_driver(sources)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        return collect_with(ctx.sources, self.judge)
