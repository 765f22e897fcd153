"""The one line `sitscheck daemon` writes to stderr after each run (journald keeps it).

Run by hand or read in `journalctl -u sitscheck-daemon`, the service says what each run found:
its number, how long it took, its headline (the status first; since the last run: how many
new, persisting, cleared) and what is new or cleared by code and GPU, at most `NAMED` of
each. Made printable: codes and rule ids come from plugins and site rule files.
"""

from __future__ import annotations

from ..models import Device, Report, Severity
from ..printable import printable

NAMED = 8


def run_line(number: int, report: Report, seconds: float) -> str:
    new = [
        _named(finding.code, finding.device)
        for check in report.checks
        for finding in check.findings
        if finding.state == "new" and finding.severity != Severity.INFO
    ]
    new += [_named(v.rule, v.device) for v in report.verdicts if v.state == "new"]
    cleared = [_named(c.code, c.device) for c in report.cleared]
    parts = [f"sitscheck daemon: run {number} ({seconds:.1f}s): {report.headline}"]
    if new:
        parts.append(f"new: {_listed(new)}")
    if cleared:
        parts.append(f"cleared: {_listed(cleared)}")
    return printable("; ".join(parts))


def failed_line(number: int, seconds: float, why: str) -> str:
    return printable(f"sitscheck daemon: run {number} ({seconds:.1f}s) failed: {why}")


def _named(code: str, device: Device | None) -> str:
    if device is None or (device.index is None and not device.pci_bus_id):
        return code
    where = f"GPU {device.index}" if device.index is not None else device.pci_bus_id
    return f"{code} ({where})"


def _listed(names: list[str]) -> str:
    unique = list(dict.fromkeys(names))
    shown = ", ".join(unique[:NAMED])
    return shown if len(unique) <= NAMED else f"{shown} and {len(unique) - NAMED} more"
