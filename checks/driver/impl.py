"""The work of the `driver` check: sources → the fused GPU fleet → inventory → findings."""

from __future__ import annotations

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.gpu.fleet import load
from sitscheck.gpu.notes import group_notes
from sitscheck.models import Evidence, Finding, Metric, Severity
from sitscheck.sources.base import Sources

from .inventory import from_fleet
from .judge import count_mismatch, judge, sources_disagree, unjudged


class DriverImpl:
    """The work behind `DriverCheck` (imported only when the check runs)."""

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        driver = sources.driver()
        if driver.state == "absent" and not config.expect_gpus:
            return driver.detail
        return None

    def collect(self, ctx: CheckContext) -> CheckOutput:
        driver = ctx.sources.driver()
        if driver.state != "present":
            return CheckOutput(
                findings=[
                    Finding(
                        code=f"driver.{driver.state}",
                        severity=Severity.CRITICAL,
                        message=driver.detail,
                        evidence=[Evidence(source="driver probe", ref=ctx.sources.mode)],
                        action="load the NVIDIA kernel module (modprobe nvidia) or reinstall it",
                    )
                ],
                facts={"gpu_count": 0, "gpus": [], "source": None},
            )
        fleet = load(ctx.sources)
        if isinstance(fleet, str):
            return CheckOutput(error=fleet.removeprefix("no GPU readings: "))
        inventory = from_fleet(fleet)
        expect = ctx.config.expect_gpus
        findings = judge(inventory, expect)
        findings.extend(count_mismatch(fleet.listed, fleet.refs))
        findings.extend(sources_disagree(fleet.disagreements))
        facts = inventory.to_fact()
        facts["disagreements"] = [d.message() for d in fleet.disagreements]
        return CheckOutput(
            findings=findings,
            metrics=[Metric(name="sitscheck.gpu.number", value=len(inventory.gpus), unit="{gpu}")],
            facts=facts,
            not_judged=group_notes(
                [*fleet.problems, *fleet.identity_notes, *unjudged(inventory, expect)]
            ),
        )
