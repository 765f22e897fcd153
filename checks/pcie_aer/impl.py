"""The work of the `pcie_aer` check: kernel log + sysfs counters → events per GPU path."""

from __future__ import annotations

from sitscheck.checks.pcie_link.links import parse_gen
from sitscheck.config import RunConfig
from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.gpu.identity import GpuRef, gpu_list_notes, known_gpus
from sitscheck.models import Metric
from sitscheck.sources.base import Sources
from sitscheck.sources.pci import port_folders

from .counters import DEVICE_COUNTERS, ROOTPORT_COUNTERS, parse_device_counters, parse_total
from .judge import GpuPath, findings, gpu_summary
from .tally import AerTally


class PcieAerImpl:
    """The work behind `PcieAerCheck` (imported only when the check runs)."""

    def applicable(self, sources: Sources, config: RunConfig) -> str | None:
        if sources.mode == "live":
            return None  # a live node always has a kernel log: one that cannot be read is UNKNOWN
        if sources.kernel_log().lines is None and not known_gpus(sources):
            return "no kernel log and no GPUs in sysfs to read AER evidence from"
        return None

    def collect(self, ctx: CheckContext) -> CheckOutput:
        scan = ctx.kernel_log()
        tally: AerTally = scan.result or AerTally()
        paths = [self._path(ctx.sources, gpu) for gpu in known_gpus(ctx.sources)]
        not_judged = gpu_list_notes(ctx.sources)  # why the GPU list is sysfs's, if a hang
        if not scan.available:
            not_judged.append(f"kernel log: {scan.reason}")
        if paths and not any(p.counters for p in paths):
            not_judged.append(
                "AER counters are not exposed in sysfs for any GPU path (kernel without AER "
                "support or ports without the AER capability): only the kernel log was read"
            )
        summaries = [gpu_summary(p, tally) for p in paths]
        for summary in summaries:
            if summary["corrected_per_min"] is None:
                not_judged.append(
                    f"GPU {summary['index']}: corrected-error rate "
                    "(the log's timestamps are not absolute)"
                )
        return CheckOutput(
            findings=findings(paths, tally, scan.source),
            metrics=self._metrics(paths, tally.count),
            facts={
                **tally.storm.facts(lambda e: e.to_fact()),  # the first 1,000, counted
                "gpus": summaries,
                "log": {"source": scan.source, "lines": scan.lines, "note": scan.note},
            },
            not_judged=not_judged,
            error=None if scan.available or (paths and ctx.sources.mode != "live") else scan.reason,
        )

    def _path(self, sources: Sources, gpu: GpuRef) -> GpuPath:
        sysfs = sources.sysfs
        ports = port_folders(sysfs, gpu.pci_bus_id) if gpu.pci_bus_id else None
        if ports is None:
            return GpuPath(gpu, [gpu.pci_bus_id] if gpu.pci_bus_id else [])
        path = GpuPath(gpu, [bus for bus, _folder in ports])
        for bus, folder in ports:
            counts: dict[str, int] = {}
            for filename, kind in DEVICE_COUNTERS.items():
                text = sysfs.read_text(f"{folder}/{filename}")
                if text is not None:
                    counts[kind] = parse_device_counters(text).get("TOTAL", 0)
            for filename, kind in ROOTPORT_COUNTERS.items():
                text = sysfs.read_text(f"{folder}/{filename}")
                total = parse_total(text) if text is not None else None
                if total is not None:
                    counts[kind] = total
            if counts:
                path.counters[bus] = counts
            elif not sysfs.exists(folder):  # found a moment ago: gone mid-read
                path.vanished.append((bus, folder))
        path.link_gen_max = parse_gen(sysfs.read_text(f"{ports[-1][1]}/max_link_speed"))
        return path

    def _metrics(self, paths: list[GpuPath], events: int) -> list[Metric]:
        metrics = [
            Metric(
                name="hw.errors",
                value=count,
                unit="{error}",
                labels={"device": bus, "severity": kind, "error.type": f"pcie_aer_{kind}"},
            )
            for path in paths
            for bus, counts in path.counters.items()
            for kind, count in counts.items()
        ]
        metrics.append(Metric(name="sitscheck.pcie.aer.events", value=events, unit="{event}"))
        return metrics
