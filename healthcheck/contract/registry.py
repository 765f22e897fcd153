"""Find checks through entry points (group `sitscheck.checks`); built-ins register the same way.

A plugin that fails to load, or declares NVML reads it may not (`nvml_read_problems`), is kept
as a `BrokenCheck`, which the runner reports as UNKNOWN: one bad plugin never takes the run
down.
"""

from __future__ import annotations

from msgspec import Struct

from .check import Check
from .declarations import nvml_read_problems
from .plugins import EntryPointLike, entry_points

GROUP = "sitscheck.checks"


class BrokenCheck(Struct, frozen=True):
    """A check whose entry point failed to load: its name and the error, reported UNKNOWN."""

    name: str
    error: str


def discover(group: str = GROUP) -> list[Check | BrokenCheck]:
    found: list[Check | BrokenCheck] = []
    seen: set[str] = set()
    for entry in sorted(entry_points(group), key=lambda e: e.name):
        if entry.name in seen:
            continue
        seen.add(entry.name)
        found.append(_load(entry))
    return found


def _load(entry: EntryPointLike) -> Check | BrokenCheck:
    try:
        target = entry.load()
        check = target() if isinstance(target, type) else target
    except Exception as exc:
        return BrokenCheck(entry.name, f"plugin {entry.value} failed to load: {exc}")
    if not isinstance(check, Check):
        return BrokenCheck(entry.name, f"plugin {entry.value} does not provide the check contract")
    problems = nvml_read_problems(check)
    if problems:
        return BrokenCheck(entry.name, f"plugin {entry.value} declares " + "; ".join(problems))
    return check


def select(
    checks: list[Check | BrokenCheck], only: list[str], skip: list[str]
) -> list[Check | BrokenCheck]:
    from ..errors import ConfigError

    names = {c.name for c in checks}
    unknown = sorted((set(only) | set(skip)) - names)
    if unknown:
        raise ConfigError(
            f"no such check: {', '.join(unknown)} (known: {', '.join(sorted(names))})"
        )
    chosen = [c for c in checks if (not only or c.name in only) and c.name not in skip]
    if not chosen:
        raise ConfigError(
            "no check selected (--check/--skip leave none): a run that checks nothing would "
            "report a healthy node"
        )
    return chosen
