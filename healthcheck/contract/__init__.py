"""The public contract for check plugins: everything a check declares and receives.

A plugin imports from here only (`from sitscheck.contract import ...`); built-in checks do
the same. See docs/plugins.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..kernlog.anchor import Anchor
from ..status import Layer, Severity
from .check import BaseCheck, Check, CheckContext, CheckOutput, LazyCheck, kernel_log_skip
from .declarations import (
    ActionCategory,
    Codes,
    CodeSpec,
    CodeTable,
    CommandSpec,
    EvidenceSpec,
    FindingKind,
    KernelLogInterest,
    LineHandler,
    LogFilesSpec,
    MetricKind,
    MetricSpec,
    NvmlRead,
    ProfileKey,
    RuleFiles,
    WorkloadSpec,
    unique_index,
)

if TYPE_CHECKING:  # imported on first use (`__getattr__`): start-up imports none of them
    from ..config import RunConfig
    from ..kernlog.lines import KernelLine
    from ..kernlog.scan import scan_lines
    from ..sources.base import Sources
    from .nvml_readings import NvmlGpu, NvmlReadings, NvmlValue, nvml_reads_skip

# The types in a check's signatures (`applicable(sources, config)`; `KernelLine`, which a
# plugin's parser may read), the kernel-log pass a handler's tests run over raw log lines
# (every prefix form), and the declared NVML readings (`ctx.nvml_readings()`) with their
# `applicable`.
_LAZY = {
    "KernelLine": ("..kernlog.lines", "KernelLine"),
    "NvmlGpu": (".nvml_readings", "NvmlGpu"),
    "NvmlReadings": (".nvml_readings", "NvmlReadings"),
    "NvmlValue": (".nvml_readings", "NvmlValue"),
    "nvml_reads_skip": (".nvml_readings", "nvml_reads_skip"),
    "RunConfig": ("..config", "RunConfig"),
    "Sources": ("..sources.base", "Sources"),
    "scan_lines": ("..kernlog.scan", "scan_lines"),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    module, attribute = _LAZY[name]
    return getattr(import_module(module, __name__), attribute)


__all__ = [
    "ActionCategory",
    "Anchor",
    "BaseCheck",
    "Check",
    "CheckContext",
    "CheckOutput",
    "CodeSpec",
    "CodeTable",
    "Codes",
    "CommandSpec",
    "EvidenceSpec",
    "FindingKind",
    "KernelLine",
    "KernelLogInterest",
    "Layer",
    "LazyCheck",
    "LineHandler",
    "LogFilesSpec",
    "MetricKind",
    "MetricSpec",
    "NvmlGpu",
    "NvmlRead",
    "NvmlReadings",
    "NvmlValue",
    "ProfileKey",
    "RuleFiles",
    "RunConfig",
    "Severity",
    "Sources",
    "WorkloadSpec",
    "kernel_log_skip",
    "nvml_reads_skip",
    "scan_lines",
    "unique_index",
]
