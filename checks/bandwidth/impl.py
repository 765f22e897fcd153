"""The work of the `bandwidth` check: whether it applies; the rest (`work`) once it runs."""

from __future__ import annotations

from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.contract.phase_record import applicable as accept_applicable
from sitscheck.gpu.judging import skip_unless_driver
from sitscheck.probes.bandwidth import BANDWIDTH_JSON
from sitscheck.sources.base import Sources

ACCEPT_RECORD = "accept/bandwidth.json"  # the phase's record in an acceptance run
NOT_ASKED = (
    "bandwidth is measured only with --bandwidth (or --load): the copies load every GPU's "
    "PCIe link and memory, which a serving node must not have"
)


class BandwidthImpl:
    """The work behind `BandwidthCheck` (imported only when the check runs)."""

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        if sources.artifact(ACCEPT_RECORD).text is not None:
            # a phase of `sitscheck accept` (live or replayed): skipped only as its plan says
            # (--skip bandwidth); a probe that did not run is UNKNOWN, never a skip or a pass
            return accept_applicable(sources, ACCEPT_RECORD)
        skip = skip_unless_driver(sources)
        if skip is not None:
            return skip
        if sources.mode == "live":
            measured = BANDWIDTH_JSON in getattr(sources, "records", {})  # sitscheck accept's phase
            return None if config.bandwidth or config.load or measured else NOT_ASKED
        artifact = sources.artifact(BANDWIDTH_JSON)
        if artifact.text is None:
            return f"{artifact.reason} (recorded without --bandwidth)"
        return None

    def collect(self, ctx: CheckContext) -> CheckOutput:
        from .work import collect  # the record, the paths and the judge: only when measured

        return collect(ctx)
