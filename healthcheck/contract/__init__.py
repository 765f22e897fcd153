"""The public contract for check plugins: everything a check declares and receives.

A plugin imports from here only (`from sitscheck.contract import ...`); built-in checks do
the same. See docs/plugins.md.
"""

from __future__ import annotations

from ..status import Layer, Severity
from .check import BaseCheck, Check, CheckContext, CheckOutput, LazyCheck
from .declarations import (
    ActionCategory,
    Anchor,
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
    ProfileKey,
    RuleFiles,
)

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
    "KernelLogInterest",
    "Layer",
    "LazyCheck",
    "LineHandler",
    "LogFilesSpec",
    "MetricKind",
    "MetricSpec",
    "ProfileKey",
    "RuleFiles",
    "Severity",
]
