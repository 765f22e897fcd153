"""`run --load`: keep every GPU busy through the sampling window, with a declared workload.

An idle GPU cannot show whether it reaches its power cap, holds its clocks or trains its PCIe
link to full speed. With `--load` (never otherwise), each GPU runs the workload a check
declares with `keeps_busy` (the soak's seeded bf16 GEMM back to back: PyTorch where it imports,
else the tensor-core kernel in PTX), through the runner every workload goes through
(`workloads.children.Background`): one isolated child per GPU, ready before the window opens
(then `WARMUP_S` for power and clocks to settle), at its work through the window and the
margin after it (the command outputs are taken then), ended and reaped before the bandwidth
probe or when the run ends, and at its deadline whatever happens.

The GPUs it loads: those NVML lists and reaches; where sitscheck's environment sets
CUDA_VISIBLE_DEVICES (a job's GPUs), only those it names (`visible_targets`). Others are
sampled idle.

What became of it is written into the snapshot at the window's end (`Load.mark`): `load`, the
workload, its engine, each GPU's state then and the errors; and, in the record of a GPU it was
to keep busy but did not through the whole window (its child failed, or was not ready when the
window opened), `unavailable["load"] = "error"` with the reason in `failures`. The telemetry
check reads that as a failed reading: UNKNOWN with the reason, for that GPU's window was not
sampled under load as asked (a load that did not run is never a pass).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..contract.declarations import WorkloadSpec
    from ..sources.nvml import Nvml
    from .children import Background, Target

WARMUP_S = 1.5  # after every child is ready: power and clocks settle before the window opens
GRACE_S = 5.0  # past the work asked: the last batch, the result printed, the end seen
ENGINE = "auto"  # PyTorch (cuBLAS) where it imports, else PTX: what the load has always run
KEY = "load"  # the key of the GPU record's `unavailable` and `failures` maps (SNAPSHOT_KEYS)


class Load:
    """The `--load` workload of one run, from its start to its end."""

    def __init__(
        self,
        workload: WorkloadSpec | None,
        wanted: Sequence[Target],
        running: Background | None = None,
        why_not: str | None = None,
    ) -> None:
        self.workload = workload
        self.wanted = list(wanted)  # the GPUs it was to keep busy
        self.running = running
        self.why_not = why_not  # why it runs on none of them
        self.ready: set[int] = set()  # the GPUs whose child was at its work as the window opened

    def mark(self, snapshot: dict[str, Any]) -> None:
        """The load's state now (the window's end) into the snapshot: its summary (`load`),
        and a failed `load` reading in the record of each GPU it did not keep busy."""
        states = self._states()
        failed = {index: why for index, (_, why) in states.items() if why is not None}
        engines = [e for _, _, _, e in self._outcome() if e]
        gpus = [
            {"index": t.index, "uuid": t.uuid, "state": state, "reason": why}
            for t in self.wanted
            for state, why in [states[t.index]]
        ]
        errors = [f"GPU {index}: {why}" for index, why in sorted(failed.items())]
        snapshot[KEY] = {
            "workload": self.workload.module if self.workload else None,
            "phase": self.workload.phase if self.workload else None,
            "engine": engines[0] if engines else "none",
            "gpus": gpus,
            "errors": [self.why_not, *errors] if self.why_not else errors,
        }
        for gpu in snapshot.get("gpus") or []:
            index = gpu.get("index") if isinstance(gpu, dict) else None
            why = failed.get(index) if isinstance(index, int) else None
            if why is not None:
                gpu.setdefault("unavailable", {})[KEY] = "error"
                gpu.setdefault("failures", {})[KEY] = why

    def _outcome(self) -> list[tuple[Target, str, str | None, str | None]]:
        return self.running.outcome() if self.running is not None else []

    def _states(self) -> dict[int, tuple[str, str | None]]:
        """Each wanted GPU's state now, and why its window was not under load (None: it was)."""
        what = f"the --load workload ({self.workload.phase})" if self.workload else "--load"
        why_not = self.why_not or "NVML gave no UUID for it (a child sees its GPU by UUID)"
        states: dict[int, tuple[str, str | None]] = {
            t.index: ("not_run", f"{what} did not run: {why_not}") for t in self.wanted
        }
        for target, status, reason, _ in self._outcome():
            if status == "running" and target.index in self.ready:
                states[target.index] = ("running", None)
            elif status == "running":
                states[target.index] = ("late", f"{what} was not ready when the window opened")
            else:
                said = f": {reason}" if reason else " before the window's end"
                states[target.index] = (status, f"{what} {status}{said}")
        return states

    def stop(self) -> None:
        """End the children and reap them (bounded); nothing when none runs."""
        if self.running is not None:
            self.running.end()


def start_load(
    nvml: Nvml,
    workload: WorkloadSpec | None,
    seconds: float,
    environ: Mapping[str, str],
    warmup_s: float | None = None,
) -> Load:
    """Start `workload` on every GPU the run may load, for `seconds` from the window's start
    (the window and its margin); return once each child is ready or has failed (at most the
    workload's start allowance) and the warm-up has passed (`warmup_s`, None: WARMUP_S)."""
    from ..threads import CannotStart
    from .children import Background, workload_args
    from .gpus import NodeGpus

    try:
        node = NodeGpus(nvml)
    except RuntimeError as exc:
        return Load(workload, [], why_not=str(exc))
    reachable = [t for t in node.targets if t.index not in node.unreachable]
    wanted = visible_targets(reachable, environ)
    if workload is None:
        return Load(None, wanted, why_not="no installed check declares a workload that keeps "
                    "the GPUs busy (`WorkloadSpec.keeps_busy`)")  # fmt: skip
    if not wanted:  # none of them may be loaded: the load asked for did not run on any
        return Load(workload, reachable, why_not=_none_visible(reachable, environ))
    warmup_s = WARMUP_S if warmup_s is None else warmup_s
    began = time.monotonic()
    # a child's time counts from its own start: the last one ready (by the start allowance),
    # the warm-up, the window and its margin are all inside it
    work_s = workload.startup_s + warmup_s + seconds
    running = Background(
        workload.module, [t for t in wanted if t.uuid],
        lambda _: workload_args(workload.phase, work_s, ENGINE),
        began + workload.startup_s + work_s + GRACE_S, startup_s=workload.startup_s,
    )  # fmt: skip
    try:
        running.start(ready_by=began + workload.startup_s)
    except CannotStart as exc:  # its children are ended already (`Background.start`)
        return Load(workload, wanted, why_not=str(exc))
    load = Load(workload, wanted, running)
    at_work = [t for t, status, _, engine in running.outcome() if status == "running" and engine]
    load.ready = {t.index for t in at_work}
    if at_work:
        time.sleep(warmup_s)
    return load


def visible_targets(targets: Sequence[Target], environ: Mapping[str, str]) -> list[Target]:
    """The GPUs of `targets` that the environment's CUDA_VISIBLE_DEVICES lets a run use: all
    where it is unset; else those its entries name, each an index (NVML's, which is PCI bus
    order: CUDA's under CUDA_DEVICE_ORDER=PCI_BUS_ID) or a UUID or a unique prefix of one, read
    as CUDA reads them: up to the first entry that names no GPU."""
    given = environ.get("CUDA_VISIBLE_DEVICES")
    if given is None:
        return list(targets)
    chosen: list[Target] = []
    for entry in (part.strip() for part in given.split(",")):
        named = [
            t
            for t in targets
            if (entry.isdigit() and t.index == int(entry))
            or (entry.startswith("GPU-") and t.uuid.startswith(entry))
        ]
        if len(named) != 1:
            break
        if named[0] not in chosen:
            chosen.append(named[0])
    return chosen


def _none_visible(reachable: Sequence[Target], environ: Mapping[str, str]) -> str:
    if not reachable:
        return "NVML reaches no GPU to load"
    given = environ.get("CUDA_VISIBLE_DEVICES", "")
    return f"CUDA_VISIBLE_DEVICES={given!r} names none of the GPUs NVML lists"
