"""The work of the `driver` check: sources → the fused GPU fleet → inventory → findings; or,
where no source lists a GPU, why no working driver serves the GPUs on the PCI bus."""

from __future__ import annotations

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.errors import ProbeError
from sitscheck.gpu.fleet import load
from sitscheck.gpu.notes import group_notes
from sitscheck.models import Evidence, Finding, Metric, Severity
from sitscheck.sources import artifacts as names
from sitscheck.sources.base import Sources
from sitscheck.sources.pci import PASSTHROUGH_DRIVERS, gpu_drivers

from .inventory import from_fleet
from .judge import action_of, count_mismatch, judge, sources_disagree, unjudged
from .kernel import MismatchLines
from .serving import Said, named_failure, quote, shows_sign, unserved


class DriverImpl:
    """The work behind `DriverCheck` (imported only when the check runs)."""

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        """Runs wherever a driver is, where GPUs must be (--expect-gpus), and where the PCI
        bus has NVIDIA GPUs that the driver probe (live, or as recorded) says no module serves;
        skipped on a node with no NVIDIA GPU and no driver (a CPU node)."""
        driver = sources.driver()
        if driver.state == "present" or config.expect_gpus:
            return None
        if driver.state == "unknown":
            return driver.detail
        bus, given = _on_bus(sources)
        if bus:
            return None
        if given:  # a passthrough node: its GPUs belong to its virtual machines
            return f"{driver.detail}; the NVIDIA GPUs are bound to another driver: {given}"
        return driver.detail

    def collect(self, ctx: CheckContext) -> CheckOutput:
        fleet = load(ctx.sources)
        if isinstance(fleet, str):
            return _unserved(ctx, fleet.removeprefix("no GPU readings: "))
        inventory = from_fleet(fleet)
        expect = ctx.config.expect_gpus
        findings = judge(inventory, expect)
        findings.extend(count_mismatch(fleet.listed, fleet.refs))
        findings.extend(sources_disagree(fleet.disagreements))
        findings.extend(_smi_unavailable(ctx.sources))
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


def _unserved(ctx: CheckContext, failure: str) -> CheckOutput:
    """No source lists a GPU: critical where the sources' words or the driver probe say why no
    working driver serves the GPUs; UNKNOWN with the reason where they do not."""
    driver = ctx.sources.driver()
    bus, _ = _on_bus(ctx.sources)
    facts = {"gpu_count": 0, "gpus": [], "source": None, "gpus_on_bus": bus}
    named = named_failure(_said(ctx))
    if named is not None and (bus or driver.state == "present"):
        code, said = named
    elif driver.state in ("absent", "not_loaded") and bus:
        code, said = "driver.not_loaded", []
    elif driver.state in ("absent", "not_loaded"):  # none on the bus, and --expect-gpus
        code, said = "driver.absent", []
    else:  # no verdict on the driver: what is missing is said (a bundle without its evidence)
        why = failure if driver.state == "present" else f"{driver.detail}; {failure}"
        return CheckOutput(error=why, facts=facts)
    if driver.state != "present":  # what found no module comes first
        said = [Said("driver probe", ctx.sources.mode, driver.detail), *said]
    return CheckOutput(findings=[unserved(code, bus, said)], facts=facts)


def _on_bus(sources: Sources) -> tuple[list[str], str]:
    """The NVIDIA GPUs on the PCI bus for NVIDIA's driver to serve, and those bound on purpose
    to another (vfio-pci, pci-stub), in words."""
    drivers = gpu_drivers(sources)
    given = ", ".join(f"{b} ({d})" for b, d in drivers.items() if d in PASSTHROUGH_DRIVERS)
    return [b for b, d in drivers.items() if d not in PASSTHROUGH_DRIVERS], given


def _said(ctx: CheckContext) -> list[Said]:
    """What NVML, `nvidia-smi -L` (the output every run reads first, never one a hang held
    back) and the kernel log said when no source listed a GPU."""
    sources = ctx.sources
    said: list[Said] = []
    snapshot, reason = sources.gpu_snapshot()
    if snapshot is None and reason:
        said.append(Said("NVML", names.NVML_JSON if sources.mode == "replay" else "nvml", reason))
    listing = sources.artifact(names.NVIDIA_SMI_L)
    words = listing.reason if listing.text is None else listing.text
    if words:
        said.append(Said("nvidia-smi", listing.ref, words))
    if ctx.kernel_pass is not None:
        try:
            scan = ctx.kernel_log()
        except ProbeError:  # no time left to read it: the tools' words stand alone
            return said
        found = scan.result if scan.available else None
        if isinstance(found, MismatchLines) and found.last is not None:
            said.append(Said("kernel log", scan.source, found.last.text))
    return said


def _smi_unavailable(sources: Sources) -> list[Finding]:
    """NVML serves the GPUs, but nvidia-smi is missing or cannot use the driver: info."""
    listing = sources.artifact(names.NVIDIA_SMI_L)
    if listing.text is not None or listing.reason is None or not shows_sign(listing.reason):
        return []
    return [
        Finding(
            code="driver.nvidia_smi_unavailable",
            severity=Severity.INFO,
            message=(
                f'nvidia-smi cannot run ("{quote(listing.reason)}"); NVML serves every GPU, '
                "so the GPUs are judged from NVML alone"
            ),
            evidence=[
                Evidence(source="nvidia-smi", ref=listing.ref, excerpt=quote(listing.reason))
            ],
            action=action_of("driver.nvidia_smi_unavailable"),
        )
    ]
