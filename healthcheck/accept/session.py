"""One acceptance run inside `app.execute`: the passive checks (the idle baseline), the phases
of the plan, then the acceptance checks over the phases' records and the kernel-log checks
again (what the load brought out), all judged by the rules together.

A GPU with a critical passive finding (lost, an uncorrectable ECC error, an Xid 79, …) gets
no load: each phase's record says why it did not run there.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..config import RunConfig
from ..contract.declarations import declaration_of
from ..contract.evidence import DeclaredEvidence
from ..contract.registry import BrokenCheck
from ..models import CheckResult, Device, Severity
from ..sources.artifacts import BANDWIDTH_JSON
from ..sources.base import Sources
from ..sources.nvml_record import normalise_bus_id
from ..workloads.bandwidth import GRACE_S as PROBE_GRACE_S
from ..workloads.children import Child, Target
from ..workloads.gpus import NodeGpus
from .multigpu import run_multigpu
from .phases import Injection, PhaseContext, phase_targets, run_plan
from .plan import Plan, PlannedPhase


class Acceptance:
    """What `sitscheck accept` adds to a live run (`app.RunRequest.acceptance`)."""

    def __init__(
        self,
        config: RunConfig,
        plan: Plan,
        gpus: NodeGpus,
        engine: str,
        began: float,
        stopped: Callable[[], bool],
        show_progress: bool,
        declared: DeclaredEvidence,
        injections: Sequence[Injection] = (),
    ) -> None:
        self.config = config
        self.declared = declared
        self.collect_to: Path | None = None  # --collect: the bundle to record the run into
        self.plan = plan
        self.gpus = gpus
        self.engine = engine
        self.began = began
        self.stopped = stopped
        self.show_progress = show_progress
        self.injections = tuple(injections)
        self.records: dict[str, str] = {}
        self.blocked: dict[int, str] = {}
        # memory in use before any load (a stop must leave each GPU back at it)
        self.baseline_used = {
            t.index: gpus.memory_used(t.index)
            for t in gpus.targets
            if t.index not in gpus.unreachable
        }

    def run(
        self,
        checks: list[Any],
        sources: Sources,
        settings: dict[str, Any],
        deadline: float,
    ) -> list[CheckResult]:
        from ..contract.runner import run_checks
        from ..sources.live import LiveSources

        if isinstance(sources, LiveSources):  # a workload the sources start ends on a signal too
            sources.stopped = self.stopped
        active = [c for c in checks if _workload(c)]
        again = [c for c in checks if not _workload(c) and _reads_kernel_log(c)]
        passive = run_checks([c for c in checks if not _workload(c)], sources, self.config,
                             settings, deadline=deadline)  # fmt: skip
        self.blocked = {**self.gpus.unreachable, **blocked_gpus(passive, self.gpus.targets)}
        ctx = PhaseContext(
            gpus=self.gpus,
            began=self.began,
            stopped=self.stopped,
            engine=self.engine,
            progress=self._progress if self.show_progress else None,
            injections=self.injections,
            blocked=dict(self.blocked),
            baseline_used=self.baseline_used,
        )
        extra = {
            "bandwidth": lambda phase: _bandwidth(sources, phase, phase_targets(phase, ctx)),
            "multigpu": lambda phase: run_multigpu(phase, ctx),
        }
        self.records = run_plan(self.plan, ctx, extra)
        records = getattr(sources, "records", None)
        if isinstance(records, dict):
            records.update(self.records)
        if self.show_progress:
            sys.stderr.write("\n")
        later = run_checks(active + again, sources, self.config, settings, deadline=deadline)
        if self.collect_to is not None:
            self._collect(sources)
        replaced = {r.name for r in later}
        return [r for r in passive if r.name not in replaced] + later

    def _collect(self, sources: Sources) -> None:
        """--collect: the passive evidence (the idle snapshot, as the checks read it), the
        kernel log after the load, and every phase's record, as a bundle `run --from` replays."""
        from ..sources.bundle_writer import open_bundle_writer
        from ..sources.collect import collect_bundle
        from ..sources.live import LiveSources

        assert self.collect_to is not None and isinstance(sources, LiveSources)
        with open_bundle_writer(self.collect_to) as out:
            collect_bundle(sources, out, self.declared)
            for name, text in self.records.items():
                out.write_text(name, text)

    def close(self) -> None:
        self.gpus.close()

    def _progress(self, children: Sequence[Child]) -> None:
        now = time.monotonic()
        phase = next((p for p in self.plan.phases
                      if p.start_s <= now - self.began < p.start_s + p.seconds), None)  # fmt: skip
        left = (self.began + phase.start_s + phase.seconds - now) if phase else 0.0
        gpus = "  ".join(
            f"GPU{c.target.index} {c.figure or c.doing or 'starting'}" for c in children
        )
        name = phase.name if phase else ""
        sys.stderr.write(f"\r\x1b[K{name} {max(left, 0.0):4.0f} s left  {gpus}"[:200])
        sys.stderr.flush()


def _workload(check: Any) -> bool:
    return not isinstance(check, BrokenCheck) and declaration_of(check).workload is not None


def _reads_kernel_log(check: Any) -> bool:
    return not isinstance(check, BrokenCheck) and declaration_of(check).kernel_log is not None


def blocked_gpus(results: Sequence[CheckResult], targets: Sequence[Target]) -> dict[int, str]:
    """GPU index -> why no load goes on it: its critical passive findings. A critical finding
    of the whole node (no device: a driver that serves no GPU) blocks every GPU; one on a
    device that is none of the GPUs (a NIC's port, a PCIe switch) blocks none."""
    blocked: dict[int, str] = {}
    for result in results:
        for finding in result.findings:
            if finding.severity != Severity.CRITICAL:
                continue
            why = f"not run: {finding.code} (critical) before the phase: {finding.message}"
            for gpu in _gpus_of(finding.device, targets):
                blocked.setdefault(gpu, why)
    return blocked


def _gpus_of(device: Device | None, targets: Sequence[Target]) -> list[int]:
    """The GPUs a finding's device is, by the most stable identity both sides know: UUID,
    then PCI bus id, then index (a device named by bus id alone that is no GPU is none)."""
    if device is None:
        return [t.index for t in targets]
    bus = normalise_bus_id(device.pci_bus_id)
    return [t.index for t in targets if _same(device, bus, t)]


def _same(device: Device, bus: str | None, target: Target) -> bool:
    if device.uuid and target.uuid:
        return device.uuid == target.uuid
    if bus and target.pci_bus_id:
        return bus == normalise_bus_id(target.pci_bus_id)
    return device.index is not None and device.index == target.index


def _bandwidth(sources: Sources, phase: PlannedPhase, targets: Sequence[Target]) -> dict[str, Any]:
    """The bandwidth phase: the bandwidth check's workload as `run --bandwidth` runs it
    (`LiveSources.artifact`), now, within the phase's time, on the phase's GPUs (`targets`:
    --gpus, less those a critical finding keeps out) and no other."""
    options = getattr(sources, "options", None)
    if options is not None:  # the probe's deadline, and its grace to print, within the phase
        options.bandwidth_s = max(phase.seconds - PROBE_GRACE_S, 1.0)
        options.bandwidth_gpus = tuple(t.uuid for t in targets if t.uuid)
    artifact = sources.artifact(BANDWIDTH_JSON)
    records = getattr(sources, "records", None)
    if artifact.text is not None and isinstance(records, dict):
        records[BANDWIDTH_JSON] = artifact.text  # the bandwidth check reads it; collect keeps it
    return {"engine": "ptx", "probe": artifact.ref, "measured": artifact.text is not None,
            "reason": artifact.reason}  # fmt: skip
