"""The work behind `Bar1MemoryCheck` (imported only when the check runs)."""

from __future__ import annotations

from sitscheck.contract import CheckContext, CheckOutput, RunConfig, Sources, nvml_reads_skip

from .check import BAR1
from .judge import judge


class Bar1MemoryImpl:
    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        # runs wherever the driver is; a bundle recorded without the reading is skipped
        return nvml_reads_skip(sources, [BAR1])

    def collect(self, ctx: CheckContext) -> CheckOutput:
        readings = ctx.nvml_readings()  # every GPU's declared readings, live or from nvml.json
        if readings.problem is not None:
            return CheckOutput(error=readings.problem)
        return judge(readings)
