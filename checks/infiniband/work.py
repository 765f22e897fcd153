"""The `infiniband` check once it runs: both readings, the PCIe pairing, the kernel log →
judge (imported by `impl` only then: a node without RDMA devices skips it unread)."""

from __future__ import annotations

from typing import Any

from sitscheck.contract import CheckContext, CheckOutput
from sitscheck.errors import ProbeTimeout
from sitscheck.sources.files import FileTree
from sitscheck.sources.pci import device_path, nvidia_gpus, upstream_chain

from .check import IB
from .cqlog import CqOverrunLines
from .facts import Settings
from .judge import Inputs, judge
from .pairing import pair
from .parse import slot_name
from .tree import split
from .window import Window, bundle_window, live_window


def collect(ctx: CheckContext) -> CheckOutput:
    try:
        window = (
            live_window(ctx, ctx.config.sample_seconds)
            if ctx.sources.mode == "live"
            else bundle_window(ctx)
        )
    except ProbeTimeout as exc:
        return CheckOutput(error=f"/sys/{IB} could not be read: {exc}")
    ctx.ensure_time("joining HCAs to GPUs")
    sysfs = ctx.sources.sysfs
    gpus = nvidia_gpus(sysfs)
    cq_log, log_facts, log_reason = _kernel_log(ctx)
    return judge(
        Inputs(
            window=window,
            source=str(sysfs.root),
            pairing=pair(_hca_chains(sysfs, window), _chains(sysfs, gpus)),
            gpu_buses=gpus,
            cq_log=cq_log,
            log_facts=log_facts,
            log_reason=log_reason,
            settings=ctx.settings if isinstance(ctx.settings, Settings) else Settings(),
        )
    )


def _hca_chains(sysfs: FileTree, window: Window) -> dict[str, list[str]]:
    buses = {
        name: bus
        for name, hca in split(window.start.files).items()
        if (bus := slot_name(hca.files.get("device/uevent"))) is not None
    }
    chains = _chains(sysfs, list(buses.values()))
    return {name: chains[bus] for name, bus in buses.items() if bus in chains}


def _chains(sysfs: FileTree, buses: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for bus in buses:
        path = device_path(sysfs, bus)
        if path is not None:
            found[bus] = upstream_chain(path)
    return found


def _kernel_log(
    ctx: CheckContext,
) -> tuple[CqOverrunLines | None, dict[str, Any] | None, str | None]:
    scan = ctx.kernel_log()
    if not scan.available or not isinstance(scan.result, CqOverrunLines):
        return None, None, scan.reason or "the kernel log pass gave no result"
    return scan.result, {"source": scan.source, "lines": scan.lines, "note": scan.note}, None
