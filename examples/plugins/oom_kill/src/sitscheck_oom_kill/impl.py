"""The work behind `OomKillCheck` (imported only when the check runs)."""

from __future__ import annotations

import msgspec
from sitscheck.contract import CheckContext, CheckOutput, RunConfig, Sources, kernel_log_skip

from .facts import KernelLog, OomKillSettings
from .judge import facts_of, findings_of, metrics_of
from .parse import OomKill


class OomKillImpl:
    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        return kernel_log_skip(sources)

    def collect(self, ctx: CheckContext) -> CheckOutput:
        scan = ctx.kernel_log()
        if not scan.available:
            return CheckOutput(error=f"kernel log could not be read: {scan.reason}")
        kills: list[OomKill] = scan.result
        settings = ctx.settings if isinstance(ctx.settings, OomKillSettings) else None
        ignored = frozenset((settings or OomKillSettings()).ignore_processes)
        log = KernelLog(source=scan.source, lines=scan.lines, note=scan.note)
        return CheckOutput(
            findings=findings_of(kills, ignored, scan.source),
            metrics=metrics_of(kills, ignored),
            facts=msgspec.to_builtins(facts_of(kills, ignored, log)),
        )
