"""Statuses, severities and layers: plain enums, importable on their own.

Kept apart from the report model so that listing checks (`sitscheck checks`) and start-up
need not import it; `sitscheck.models` re-exports them.
"""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """Status of a check, a rule verdict or a whole run; exit codes are Nagios's."""

    OK = "ok"
    WARNING = "warning"
    CRITICAL = "critical"
    UNKNOWN = "unknown"
    SKIPPED = "skipped"

    @property
    def exit_code(self) -> int:
        return _EXIT_CODES[self]

    @property
    def rank(self) -> int:
        """How bad: a run's status is the worst rank among its parts."""
        return _RANKS[self]


_EXIT_CODES = {
    Status.OK: 0,
    Status.SKIPPED: 0,
    Status.WARNING: 1,
    Status.CRITICAL: 2,
    Status.UNKNOWN: 3,
}
# A node whose health could not be established is worse than one with a known warning:
# critical > unknown > warning > ok > skipped.
_RANKS = {
    Status.SKIPPED: 0,
    Status.OK: 1,
    Status.WARNING: 2,
    Status.UNKNOWN: 3,
    Status.CRITICAL: 4,
}


def worst(statuses: list[Status], default: Status = Status.OK) -> Status:
    """The worst of several statuses; `default` when there are none."""
    return max(statuses, key=lambda s: s.rank, default=default)


class Severity(str, Enum):
    """Severity of a finding. `info` is shown but never changes a status."""

    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"
    UNKNOWN = "unknown"

    def as_status(self) -> Status:
        return {
            Severity.INFO: Status.OK,
            Severity.WARNING: Status.WARNING,
            Severity.CRITICAL: Status.CRITICAL,
            Severity.UNKNOWN: Status.UNKNOWN,
        }[self]


class Layer(str, Enum):
    """The three layers of a diagnosis: a lower layer explains symptoms above it."""

    HARDWARE = "hardware"
    DRIVER = "driver"
    RUNTIME = "runtime"
