"""Start the bandwidth probe from sitscheck: a child process under a deadline, its record back.

The child (`sitscheck.probes.bandwidth` in an isolated interpreter, `child_python`) leads its
own process group (run as a command is), so a CUDA call that hangs costs its timeout and
nothing more: the group is killed, and the driver releases a killed process's memory. The
record it prints is the `bandwidth.json` artifact a bundle keeps and a replay reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ...sources import child_python
from ...sources.base import Artifact
from . import BANDWIDTH_JSON, FORMAT

# The probe stops itself at its deadline; this much more is left for releasing its memory and
# printing before the process group is killed.
GRACE_S = 4.0
# The probe's own deadline: it needs about 1 s per GPU (issue 22: under 10 s for 8 GPUs); a
# check deadline shorter than twice this gives it half of that deadline.
BUDGET_S = 12.0
_MODULE = "sitscheck.probes.bandwidth"


def budget_s(check_timeout_s: float) -> float:
    return min(BUDGET_S, max(check_timeout_s / 2.0, 2.0))


def run_probe(budget: float, gpus: Sequence[str] | None = None) -> Artifact:
    """The probe's record, measured within `budget` on `gpus` (UUIDs: the child's
    CUDA_VISIBLE_DEVICES, so it sees and loads those alone; None: every GPU)."""
    env = None if gpus is None else {"CUDA_VISIBLE_DEVICES": ",".join(gpus)}
    result = child_python.run(_MODULE, ("--deadline-s", f"{budget:g}"), budget + GRACE_S, env=env)
    text = result.stdout.strip()
    if is_record(text):
        return Artifact(BANDWIDTH_JSON, text + "\n", result.display)
    reason = result.failure_reason() or f"`{result.display}` printed no bandwidth record"
    return Artifact(BANDWIDTH_JSON, None, result.display, reason=reason)


def is_record(text: str) -> bool:
    if not text.startswith("{"):
        return False
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT
