"""What the InfiniBand judging reads (`Inputs`) and what it writes (`Output`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from msgspec import Struct, field
from sitscheck.contract import CheckOutput
from sitscheck.models import Device, Evidence, Finding, Severity

from .cqlog import CqOverrunLines
from .facts import Settings
from .pairing import Pairing
from .window import Window


class Inputs(Struct, frozen=True):
    """What the judging reads: the window, each HCA's paired GPUs, the overrun lines, settings."""

    window: Window
    source: str  # "/sys" live, the bundle's sysfs folder in a replay
    pairing: Mapping[str, Pairing] = field(default_factory=dict)
    gpu_buses: Sequence[str] = ()
    cq_log: CqOverrunLines | None = None
    log_facts: dict[str, Any] | None = None
    log_reason: str | None = None  # why the kernel log could not be read
    settings: Settings = field(default_factory=Settings)


class Output(Struct):
    """What the judging writes, and the window it judges over (shared by every HCA, port)."""

    inputs: Inputs
    seconds: float | None  # between the readings; None: read once
    rate_window: float | None  # the same where long enough for a rate
    out: CheckOutput = field(default_factory=CheckOutput)
    notes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))

    def find(
        self, code: str, severity: Severity, message: str, device: Device, evidence: Evidence
    ) -> None:
        self.out.findings.append(
            Finding(
                code=code, severity=severity, message=message, device=device, evidence=[evidence]
            )
        )

    def note(self, reason: str, who: str) -> None:
        if who not in self.notes[reason]:
            self.notes[reason].append(who)


def present_labels(labels: Mapping[str, str | None]) -> dict[str, str]:
    """A metric's labels that have a value."""
    return {k: v for k, v in labels.items() if v}
