"""Run the bandwidth check's workload from sitscheck: one child under a deadline, its record back.

The workload (the module the bandwidth check declares, `sitscheck.probes.bandwidth`) is run as
every declared workload is (`workloads.children.run_children`: an isolated interpreter leading
its own process group, heard until its result or the deadline, then ended and reaped), so a
CUDA call that hangs costs its deadline and nothing more: the group is killed, and the driver
releases a killed process's memory. One child measures every GPU it sees (the peer copies need
them together). The record it prints is the `bandwidth.json` artifact a bundle keeps and a
replay reads; `run --bandwidth` and accept's bandwidth phase both come here
(`LiveSources.artifact`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence

from ..sources import child_python
from ..sources.artifacts import BANDWIDTH_FORMAT as FORMAT
from ..sources.artifacts import BANDWIDTH_JSON
from ..sources.base import Artifact
from .children import INHERITED, STOP_GRACE_S, Target, run_children, workload_args

# The probe stops itself at its deadline; this much more is left for releasing its memory and
# printing before the process group is killed.
GRACE_S = 4.0
# The probe's own deadline: it needs about 1 s per GPU (issue 22: under 10 s for 8 GPUs); a
# check deadline shorter than twice this gives it half of that deadline.
BUDGET_S = 12.0
PHASE = "bandwidth"
ENGINE = "ptx"  # the copies are the driver API's and a PTX kernel's, whatever the run's engine


def budget_s(check_timeout_s: float) -> float:
    return min(BUDGET_S, max(check_timeout_s / 2.0, 2.0))


def run_probe(
    module: str,
    budget: float,
    gpus: Sequence[str] | None = None,
    stop: Callable[[], bool] = lambda: False,
    *,
    clock: Callable[[], float] = time.monotonic,
    grace_s: float = STOP_GRACE_S,
) -> Artifact:
    """The record of the bandwidth workload `module`, measured within `budget` on `gpus`
    (UUIDs: the child's CUDA_VISIBLE_DEVICES, so it sees and loads those alone; None: the GPUs
    of sitscheck's own environment). `stop()` true (a signal) ends it at once. `clock`,
    `grace_s`: the runner's (`run_children`)."""
    args = workload_args(PHASE, budget, ENGINE)
    display = " ".join(child_python.argv(module, *args))
    visible = INHERITED if gpus is None else ",".join(gpus)
    target = Target(index=0, uuid=visible, pci_bus_id=None, name=None)  # one child, every GPU
    (child,) = run_children(
        module, [target], lambda _: args, clock() + budget + GRACE_S, stop,
        visible=visible, clock=clock, grace_s=grace_s,
    )  # fmt: skip
    if child.status == "ok" and child.result is not None and child.result.get("format") == FORMAT:
        return Artifact(BANDWIDTH_JSON, json.dumps(child.result) + "\n", display)
    reason = child.reason or "it printed no bandwidth record"
    return Artifact(BANDWIDTH_JSON, None, display, reason=f"`{display}`: {reason}")


def is_record(text: str) -> bool:
    if not text.startswith("{"):
        return False
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT
