"""The work of the `infiniband` check: whether it applies; the rest (`work`) once it runs."""

from __future__ import annotations

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.sources.base import Sources

from .check import IB


class InfinibandImpl:
    """The work behind `InfinibandCheck` (imported only when the check runs)."""

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        if sources.sysfs.list_dir(IB):
            return None
        if sources.mode == "live":
            return f"no RDMA device: {sources.sysfs.root}/{IB} is empty or absent"
        return f"the bundle holds no sysfs/{IB} (no RDMA device, or not recorded)"

    def collect(self, ctx: CheckContext) -> CheckOutput:
        from .work import collect  # the readings, pairing and judge: only on a node with HCAs

        return collect(ctx)
