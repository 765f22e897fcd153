"""The evidence of the selected checks, gathered from their declarations.

Live reading (which commands `LiveSources` may run), `sitscheck collect` (what it records)
and replay (what a bundle must hold) all derive from this one gathering, so a plugin's
evidence is recorded and replayed like a built-in's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from msgspec import Struct, field

from ..errors import ConfigError
from .declarations import CommandSpec, LogFilesSpec, NvmlRead, WorkloadSpec, declaration_of


class DeclaredEvidence(Struct):
    """What the selected checks read: commands, sysfs, procfs, files, logs, NVML (their
    declared calls by key), kernel log."""

    commands: dict[str, CommandSpec] = field(default_factory=dict)
    sysfs: list[str] = field(default_factory=list)
    sysfs_paths: list[str] = field(default_factory=list)  # "module:function" (sources) -> paths
    procfs: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    logs: dict[str, LogFilesSpec] = field(default_factory=dict)
    nvml: bool = False
    nvml_reads: dict[str, NvmlRead] = field(default_factory=dict)
    kernel_log: bool = False
    workloads: list[WorkloadSpec] = field(default_factory=list)  # in plan order (`accept`)


def gather(checks: Iterable[Any]) -> DeclaredEvidence:
    """What the checks read, each piece once; a file name two checks declare with different
    commands, or an NVML key with different calls, is a contract error (ConfigError naming
    both)."""
    out = DeclaredEvidence()
    commands = _Claims(out.commands, "commands", lambda c: " ".join(c.argv))
    reads = _Claims(
        out.nvml_reads, "NVML calls", lambda r: f"{r.function}({', '.join(map(str, r.args))})"
    )
    for check in checks:
        if not hasattr(check, "collect"):
            continue  # a plugin that failed to load declares nothing
        declaration = declaration_of(check)
        if declaration.workload is not None:
            out.workloads.append(declaration.workload)
            out.workloads.sort(key=lambda w: w.order)
        spec = declaration.evidence
        for command in spec.commands:
            commands.claim(command.file, command, check.name)
        for read in spec.nvml_reads:
            reads.claim(read.key, read, check.name)
        _extend(out.sysfs, spec.sysfs)
        _extend(out.sysfs_paths, spec.sysfs_paths)
        _extend(out.procfs, spec.procfs)
        _extend(out.files, spec.files)
        for log in spec.logs:
            out.logs.setdefault(log.folder, log)
        out.nvml = out.nvml or bool(spec.nvml) or bool(spec.nvml_reads)
        out.kernel_log = out.kernel_log or spec.kernel_log
    return out


T = TypeVar("T")


class _Claims(Generic[T]):
    """One kind of evidence by its name (a file, an NVML key), and the check that first
    declared each: another check's different declaration of the name is refused."""

    def __init__(self, into: dict[str, T], what: str, said: Callable[[T], str]) -> None:
        self.into, self.what, self.said = into, what, said
        self.owner: dict[str, str] = {}

    def claim(self, name: str, item: T, check: str) -> None:
        known = self.into.get(name)
        if known is not None and self.said(known) != self.said(item):
            raise ConfigError(
                f"checks {self.owner[name]} and {check} declare {name} with different "
                f"{self.what} ({self.said(known)} / {self.said(item)})"
            )
        self.into[name] = item
        self.owner.setdefault(name, check)


def _extend(into: list[str], items: Iterable[str]) -> None:
    for item in items:
        if item not in into:
            into.append(item)
