"""`sitscheck accept`'s preparation: the GPUs, the refusals, the plan, printed before it starts.

Refusals are a user's matter (exit 3, one line): another process on a GPU it would load, MIG
enabled (both unless --force), an unknown GPU index or phase, a budget too small. A node whose
NVML cannot be used is not refused: the passive checks say why (the driver check's finding),
and every phase's record says it did not run.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence

from ..config import RunConfig
from ..contract.evidence import DeclaredEvidence
from ..errors import ConfigError
from ..sources.nvml import Nvml, NvmlUnavailable
from ..workloads.gpus import NodeGpus
from .phases import Injection
from .plan import PhaseShare, make_plan
from .session import Acceptance

ENGINES = ("auto", "torch", "ptx")


class Refused(ConfigError):
    """sitscheck accept will not start (exit 3)."""


def prepare(
    config: RunConfig,
    declared: DeclaredEvidence,
    budget_s: float,
    gpus: str | None,
    skip: Sequence[str],
    engine: str,
    force: bool,
    injections: Sequence[str],
    show_progress: bool,
    stopped: Callable[[], bool],
) -> Acceptance:
    began = time.monotonic()
    if engine not in ENGINES:
        raise Refused(f"--engine {engine}: one of {', '.join(ENGINES)}")
    phases = phase_shares(declared)
    names = [p.name for p in phases]
    for name in skip:
        if name not in names:
            raise Refused(f"--skip {name}: not a phase (phases: {', '.join(names)})")
    faults = [_injection(text) for text in injections]
    node = _node_gpus(config)
    try:
        chosen = _chosen(gpus, node)
        if node.nvml is not None and not force:
            _refuse_busy(node, chosen)
        try:
            plan = make_plan(budget_s, phases, chosen, skip)
        except ValueError as exc:
            raise Refused(str(exc)) from exc
    except Refused:
        node.close()
        raise
    sys.stderr.write("\n".join(plan.lines()) + "\n")
    sys.stderr.flush()
    return Acceptance(config, plan, node, engine, began, stopped, show_progress, declared, faults)


def phase_shares(declared: DeclaredEvidence) -> list[PhaseShare]:
    """The declared workloads as the plan takes them, in plan order."""
    return [
        PhaseShare(w.phase, w.share, w.module, w.cooldown_s, w.multi_gpu, w.startup_s)
        for w in declared.workloads
    ]


def _node_gpus(config: RunConfig) -> NodeGpus:
    """The node's GPUs, or none with why (the passive checks name the failure too)."""
    try:
        nvml = Nvml.load(config.nvml_deadline_s)
        nvml.init()
    except NvmlUnavailable as exc:
        return NodeGpus.empty(f"NVML: {exc}")
    try:
        return NodeGpus(nvml)
    except RuntimeError as exc:
        nvml.shutdown()
        return NodeGpus.empty(f"NVML: {exc}")


def _chosen(gpus: str | None, node: NodeGpus) -> list[int]:
    indices = [t.index for t in node.targets]
    if gpus is None or not gpus.strip():
        return indices
    chosen: list[int] = []
    for part in gpus.split(","):
        try:
            index = int(part)
        except ValueError:
            raise Refused(f"--gpus {gpus}: {part!r} is not a GPU index") from None
        if index not in indices:
            has = (
                f"{len(indices)}"
                if indices or not node.unavailable
                else f"none: {node.unavailable}"
            )
            raise Refused(f"--gpus {gpus}: no GPU {index} (this node has {has})")
        chosen.append(index)
    return sorted(set(chosen))


def _refuse_busy(node: NodeGpus, chosen: Sequence[int]) -> None:
    for index in chosen:
        if index in node.unreachable:
            continue  # not loaded: its phases say why
        if node.mig_enabled(index):
            raise Refused(
                f"GPU {index} has MIG enabled: accept loads whole GPUs (--force to run anyway)"
            )
        users = node.busy_with(index)
        if users:
            raise Refused(
                f"GPU {index} is in use by {', '.join(users)}: accept would disturb it and "
                "measure it wrong (--force to run anyway)"
            )


def _injection(text: str) -> Injection:
    fault, _, gpu = text.partition(":")
    try:
        return Injection(fault, int(gpu or "0"))
    except ValueError:
        raise Refused(f"--inject {text}: FAULT:GPU (test-only)") from None
