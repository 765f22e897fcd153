"""The `xid` check: kernel log → Xid/SXid events → findings per GPU and code."""

from __future__ import annotations

from sitscheck.contract import (
    Anchor,
    EvidenceSpec,
    KernelLogInterest,
    LazyCheck,
    MetricKind,
    MetricSpec,
)
from sitscheck.status import Layer

KERNEL_LOG = KernelLogInterest(
    anchors=(Anchor(b"Xid"), Anchor(b"NVRM")),
    handler="sitscheck.checks.xid.parse:XidLines",
)


class XidCheck(LazyCheck):
    name = "xid"
    summary = "NVIDIA Xid / NVSwitch SXid events in the kernel log, with the action to take"
    layer = Layer.DRIVER
    needs_gpu = False
    metrics = (
        MetricSpec(
            "sitscheck.gpu.xid.events", "{event}", "Xid events by code and GPU", MetricKind.EVENT
        ),
    )
    codes = "sitscheck.checks.xid.codes:CODES"
    facts = "sitscheck.checks.xid.facts:Facts"
    evidence = EvidenceSpec(
        summary="kernel log (/dev/kmsg, dmesg, journalctl -k or a file): NVRM Xid / SXid lines",
        kernel_log=True,
    )
    kernel_log = KERNEL_LOG
    impl = "sitscheck.checks.xid.impl:XidImpl"
