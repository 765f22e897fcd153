"""The work of the `xid` check: kernel log → Xid/SXid events → findings per GPU and code."""

from __future__ import annotations

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput, kernel_log_skip
from sitscheck.gpu.identity import gpu_list_notes, known_gpus
from sitscheck.models import Metric
from sitscheck.sources.base import Sources

from .judge import findings, gpu_summaries, group_events
from .tally import XidTally


class XidImpl:
    """The work behind `XidCheck` (imported only when the check runs)."""

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        return kernel_log_skip(sources)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        scan = ctx.kernel_log()
        if not scan.available:
            return CheckOutput(error=f"kernel log could not be read: {scan.reason}")
        tally: XidTally = scan.result
        gpus = known_gpus(ctx.sources)
        groups = group_events(tally)
        return CheckOutput(
            findings=findings(groups, gpus, self._recovery(ctx), scan.source),
            metrics=[
                Metric(
                    name="sitscheck.gpu.xid.events",
                    value=group.count,
                    unit="{event}",
                    labels={
                        "xid": str(group.code),
                        "kind": group.kind,
                        "device": group.device or "",
                    },
                )
                for group in groups
            ],
            facts={
                **tally.storm.facts(lambda e: e.to_fact()),  # the first 1,000, counted
                "gpus": gpu_summaries(groups, gpus),
                "log": {"source": scan.source, "lines": scan.lines, "note": scan.note},
            },
            not_judged=gpu_list_notes(ctx.sources),  # why the GPU list is sysfs's, if a hang
        )

    def _recovery(self, ctx: CheckContext) -> dict[int, int]:
        snapshot, _ = ctx.sources.gpu_snapshot()
        out: dict[int, int] = {}
        for gpu in (snapshot or {}).get("gpus") or []:
            value = gpu.get("recovery_action")
            if isinstance(value, int) and isinstance(gpu.get("index"), int):
                out[gpu["index"]] = value
        return out
