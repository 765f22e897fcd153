"""The work of the `driver` check: sources → inventory → findings."""

from __future__ import annotations

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.gpu.notes import group_notes
from sitscheck.models import Evidence, Finding, Metric, Severity
from sitscheck.smi.list_gpus import parse_list_gpus
from sitscheck.smi.query_csv import parse_query_csv
from sitscheck.smi.values import SmiParseError
from sitscheck.sources import artifacts as names
from sitscheck.sources.base import Sources

from .inventory import Inventory, from_list, from_query_rows, from_snapshot, judge, unjudged


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
        inventory, problems = self._inventory(ctx)
        if inventory is None:
            return CheckOutput(error="; ".join(problems) or "no GPU inventory could be read")
        findings = judge(inventory, ctx.config.expect_gpus)
        findings.extend(self._cross_check(ctx, inventory))
        return CheckOutput(
            findings=findings,
            metrics=[Metric(name="sitscheck.gpu.count", value=len(inventory.gpus), unit="{gpu}")],
            facts=inventory.to_fact(),
            not_judged=group_notes([p for p in problems if p] + unjudged(inventory)),
        )

    def _inventory(self, ctx: CheckContext) -> tuple[Inventory | None, list[str]]:
        problems: list[str] = []
        snapshot, reason = ctx.sources.gpu_snapshot()
        if snapshot is not None and snapshot.get("gpus") is not None and not snapshot.get("error"):
            return from_snapshot(snapshot, "nvml"), problems
        problems.append(f"NVML: {reason or (snapshot and snapshot.get('error'))}")
        listing = ctx.sources.artifact(names.NVIDIA_SMI_L)
        if listing.text is not None:
            try:
                parsed = parse_list_gpus(listing.text)
            except SmiParseError as exc:
                problems.append(f"{listing.ref}: {exc}")
            else:
                if parsed.gpus or parsed.lost:
                    return from_list(parsed, listing.ref), problems
                problems.append(f"{listing.ref}: " + "; ".join(e.message for e in parsed.errors))
        else:
            problems.append(listing.reason or "")
        query = ctx.sources.artifact(names.NVIDIA_SMI_QUERY_GPU)
        if query.text is not None:
            try:
                return from_query_rows(parse_query_csv(query.text), query.ref), problems
            except SmiParseError as exc:
                problems.append(f"{query.ref}: {exc}")
        return None, problems

    def _cross_check(self, ctx: CheckContext, inventory: Inventory) -> list[Finding]:
        """Live, or when a bundle holds both: NVML and nvidia-smi must list the same GPUs."""
        if inventory.source != "nvml":
            return []
        listing = ctx.sources.artifact(names.NVIDIA_SMI_L)
        if listing.text is None:
            return []
        try:
            parsed = parse_list_gpus(listing.text)
        except SmiParseError:
            return []
        listed = len(parsed.gpus) + len(parsed.lost)  # a lost GPU is still listed, as an error
        if listed == len(inventory.gpus):
            return []
        return [
            Finding(
                code="driver.count_mismatch",
                severity=Severity.CRITICAL,
                message=f"NVML lists {len(inventory.gpus)} GPUs, nvidia-smi -L lists {listed}",
                evidence=[
                    Evidence(source="nvidia-smi", ref=listing.ref, excerpt=listing.text[:2000])
                ],
                action=(
                    "a GPU is dropping in and out: check the kernel log for Xid 79 and AER errors"
                ),
            )
        ]
