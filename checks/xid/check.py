"""The `xid` check: kernel log → Xid/SXid events → findings per GPU and code."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sitscheck.check import MetricSpec
from sitscheck.status import Layer

if TYPE_CHECKING:
    from sitscheck.check import CheckContext, CheckOutput
    from sitscheck.config import RunConfig
    from sitscheck.sources.base import Sources


class XidCheck:
    name = "xid"
    summary = "NVIDIA Xid / NVSwitch SXid events in the kernel log, with the action to take"
    layer = Layer.DRIVER
    needs_gpu = False
    metrics = (MetricSpec("sitscheck.gpu.xid.events", "{event}", "Xid events by code and GPU"),)

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        from .impl import XidImpl

        return XidImpl().applicable(sources, config)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        from .impl import XidImpl

        return XidImpl().collect(ctx)
