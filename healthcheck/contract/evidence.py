"""The evidence of the selected checks, gathered from their declarations.

Live reading (which commands `LiveSources` may run), `sitscheck collect` (what it records)
and replay (what a bundle must hold) all derive from this one gathering, so a plugin's
evidence is recorded and replayed like a built-in's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from msgspec import Struct, field

from ..errors import ConfigError
from .declarations import CommandSpec, LogFilesSpec, WorkloadSpec, declaration_of


class DeclaredEvidence(Struct):
    """What the selected checks read: commands, sysfs, procfs, files, logs, NVML, kernel log."""

    commands: dict[str, CommandSpec] = field(default_factory=dict)
    sysfs: list[str] = field(default_factory=list)
    sysfs_paths: list[str] = field(default_factory=list)  # "module:function" (sources) -> paths
    procfs: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    logs: dict[str, LogFilesSpec] = field(default_factory=dict)
    nvml: bool = False
    kernel_log: bool = False
    workloads: list[WorkloadSpec] = field(default_factory=list)  # in plan order (`accept`)


def gather(checks: Iterable[Any]) -> DeclaredEvidence:
    """What the checks read, each piece once; a file name two checks declare with different
    commands is a contract error (ConfigError naming both)."""
    out = DeclaredEvidence()
    owner: dict[str, str] = {}
    for check in checks:
        if not hasattr(check, "collect"):
            continue  # a plugin that failed to load declares nothing
        declaration = declaration_of(check)
        if declaration.workload is not None:
            out.workloads.append(declaration.workload)
            out.workloads.sort(key=lambda w: w.order)
        spec = declaration.evidence
        for command in spec.commands:
            known = out.commands.get(command.file)
            if known is not None and known.argv != command.argv:
                raise ConfigError(
                    f"checks {owner[command.file]} and {check.name} declare {command.file} "
                    f"with different commands ({' '.join(known.argv)} / {' '.join(command.argv)})"
                )
            out.commands[command.file] = command
            owner.setdefault(command.file, check.name)
        _extend(out.sysfs, spec.sysfs)
        _extend(out.sysfs_paths, spec.sysfs_paths)
        _extend(out.procfs, spec.procfs)
        _extend(out.files, spec.files)
        for log in spec.logs:
            out.logs.setdefault(log.folder, log)
        out.nvml = out.nvml or bool(spec.nvml)
        out.kernel_log = out.kernel_log or spec.kernel_log
    return out


def _extend(into: list[str], items: Iterable[str]) -> None:
    for item in items:
        if item not in into:
            into.append(item)
