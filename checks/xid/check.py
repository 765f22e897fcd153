"""The `xid` check: kernel log → Xid/SXid events → findings per GPU and code."""

from __future__ import annotations

from sitscheck.check import LazyCheck, MetricSpec
from sitscheck.status import Layer


class XidCheck(LazyCheck):
    name = "xid"
    summary = "NVIDIA Xid / NVSwitch SXid events in the kernel log, with the action to take"
    layer = Layer.DRIVER
    needs_gpu = False
    metrics = (MetricSpec("sitscheck.gpu.xid.events", "{event}", "Xid events by code and GPU"),)
    impl = "sitscheck.checks.xid.impl:XidImpl"
