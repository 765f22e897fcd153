"""Serve the live node through the `Sources` contract: commands, NVML, kernel log, sysfs.

Each piece of evidence is gathered once per run (checks running concurrently share it):
a command's output, the NVML snapshot (one NVML session, one sampled window for all GPUs).
"""

from __future__ import annotations

import os
import platform
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field

from .. import __version__
from ..contract.declarations import CommandSpec, NvmlRead, WorkloadSpec
from ..contract.evidence import DeclaredEvidence
from ..threads import CannotStart
from .artifacts import BANDWIDTH_JSON
from .base import Artifact, DriverProbe, KernelLogStream, LastKnown, Memo
from .command import CommandResult, CommandRunner
from .files import FileTree
from .gpu_snapshot import collect_snapshot
from .hostname import node_name
from .kernel_log import open_live_kernel_log
from .nvml import Nvml, NvmlUnavailable
from .scope import waiting_on

if TYPE_CHECKING:
    from ..workloads.load import Load

PROC_DRIVER = "/proc/driver/nvidia/version"
DEV_CTL = "/dev/nvidiactl"


class LiveOptions(Struct):
    """How the live node is read: timeouts, the sampling window, sysfs/procfs roots, log files."""

    command_timeout_s: float = 10.0
    nvml_deadline_s: float = 5.0
    sample_seconds: float = 3.0
    sample_interval_s: float = 0.2
    sys_root: str = "/sys"
    proc_root: str = "/proc"
    # log files by the folder a check declared them under (`LogFilesSpec`)
    log_paths: dict[str, list[Path]] = field(default_factory=dict)
    load_seconds: float | None = None
    load_warmup_s: float | None = None  # None: the load's own (`workloads.load.WARMUP_S`)
    bandwidth_s: float | None = None  # the bandwidth probe's deadline; None: not measured
    # the GPUs the probe may load (UUIDs, its CUDA_VISIBLE_DEVICES; an acceptance phase's);
    # None: every GPU (`--bandwidth`), empty: none (the probe is not started)
    bandwidth_gpus: tuple[str, ...] | None = None
    driver_markers: tuple[str, ...] = (PROC_DRIVER, DEV_CTL)


class LiveSources(Memo):
    def __init__(
        self,
        options: LiveOptions,
        runner: CommandRunner | None = None,
        commands: Mapping[str, CommandSpec] | None = None,
        nvml_reads: Mapping[str, NvmlRead] | None = None,
        workloads: Sequence[WorkloadSpec] = (),
        installed: Callable[[], DeclaredEvidence] | None = None,
    ) -> None:
        """`workloads`: the selected checks' (their records; `--load` and `--bandwidth` run
        theirs, else the installed checks'). `installed`: what every installed check declares,
        read where no selection is given (the registry's, handed down by the app: the sources
        lie below the check runtime and import none of it); None: nothing more."""
        super().__init__()
        self.options = options
        # the selected checks' declared commands and NVML calls; None: every installed check's
        self._commands = dict(commands) if commands is not None else None
        self._nvml_reads = dict(nvml_reads) if nvml_reads is not None else None
        self._installed: DeclaredEvidence | None = None
        self._find_installed = installed
        self._procfs = FileTree(Path(options.proc_root))
        self._files = FileTree(Path("/"))
        self.runner = runner or CommandRunner()
        self._sysfs = FileTree(Path(options.sys_root))
        self._lock = threading.Lock()
        self._artifacts: dict[str, Artifact] = {}
        self._command_locks: dict[str, threading.Lock] = {}
        self._snapshot_lock = threading.Lock()
        self._snapshot: tuple[dict[str, Any] | None, str | None] | None = None
        # set as the GPUs' sampling window starts, or once the snapshot is taken without one
        self.window_started = threading.Event()
        self._nvml: Nvml | None = None
        self._driver: DriverProbe | None = None
        self._load: Load | None = None
        # the acceptance phases' records (`sitscheck accept`), by artifact name
        self.records: dict[str, str] = {}
        self._workloads = tuple(workloads)
        self._workload_records = {w.record for w in workloads}
        # true once a signal came (`sitscheck accept` sets its own): a workload ends at once
        self.stopped: Callable[[], bool] = lambda: False

    @property
    def mode(self) -> str:
        return "live"

    @property
    def sysfs(self) -> FileTree:
        return self._sysfs

    @property
    def procfs(self) -> FileTree:
        return self._procfs

    @property
    def files(self) -> FileTree:
        return self._files

    def driver(self) -> DriverProbe:
        if self._driver is None:
            self._driver = self._probe_driver()
        return self._driver

    def _probe_driver(self) -> DriverProbe:
        markers = self.options.driver_markers
        found = next((m for m in markers if os.path.exists(m)), None)
        if found is not None:
            return DriverProbe("present", f"{found} exists")
        if self.runner.which("nvidia-smi") is not None:
            return DriverProbe(
                "not_loaded", "nvidia-smi is installed but the NVIDIA kernel module is not loaded"
            )
        return DriverProbe("absent", "no NVIDIA driver on this machine (no nvidia-smi, no module)")

    def artifact(self, name: str) -> Artifact:
        if name == BANDWIDTH_JSON:
            return self.memo(name, self._bandwidth)
        if name in self.records:
            return Artifact(name, self.records[name], name)
        if name in self._workload_records:
            return Artifact(name, None, name, reason=f"{name}: measured only by `sitscheck accept`")
        spec = self._declared_commands().get(name)
        if spec is None:
            reason = f"no selected check declares {name}"
            return Artifact(name, None, name, reason=reason, absent=True)
        with self._lock:
            lock = self._command_locks.setdefault(name, threading.Lock())
        # Concurrent checks asking for the same output share one run, and each of them, while
        # it waits, is noted as waiting on that command (named should its own deadline pass).
        with waiting_on(f"`{' '.join(spec.argv)}`"), lock:
            if name not in self._artifacts:
                self._artifacts[name] = _as_artifact(
                    name, self.runner.run(spec.argv, self._timeout(spec))
                )
            return self._artifacts[name]

    def kernel_log(self) -> KernelLogStream:
        return open_live_kernel_log(self.runner, self.options.command_timeout_s)

    def nvml(self) -> Nvml:
        with self._lock:
            if self._nvml is None:
                self._nvml = Nvml.load(self.options.nvml_deadline_s)
            return self._nvml

    def gpu_snapshot(self) -> tuple[dict[str, Any] | None, str | None]:
        with self._snapshot_lock:
            try:
                if self._snapshot is None:
                    self._snapshot = self._collect_snapshot()
                return self._snapshot
            finally:
                self.window_started.set()

    def _collect_snapshot(self) -> tuple[dict[str, Any] | None, str | None]:
        if self.driver().state != "present":
            return None, self.driver().detail
        try:
            nvml = self.nvml()
            nvml.init()
        except NvmlUnavailable as exc:
            return None, str(exc)
        if self.options.load_seconds:
            self._start_load(nvml, self.options.load_seconds)
        try:
            snapshot = collect_snapshot(
                nvml,
                self.options.sample_seconds,
                self.options.sample_interval_s,
                on_window=self.window_started.set,
                reads=tuple(self._declared_reads().values()),
            )
        except CannotStart as exc:  # every GPU check is UNKNOWN, naming it
            return None, f"the GPUs could not be sampled: {exc}"
        if self._load is not None:  # what the window was sampled under, as it closes
            self._load.mark(snapshot)
        return snapshot, None

    def _start_load(self, nvml: Nvml, seconds: float) -> None:
        """--load: the declared workload that keeps the GPUs busy, at work before the window
        opens (`workloads.load`)."""
        from ..workloads.load import start_load

        busy = self._declared_workload(lambda w: w.keeps_busy)
        self._load = start_load(nvml, busy, seconds, os.environ, self.options.load_warmup_s)

    def _declared_workload(self, wanted: Callable[[WorkloadSpec], bool]) -> WorkloadSpec | None:
        """The first `wanted` workload of the run's checks, else of every installed check."""
        for workload in self._workloads:
            if wanted(workload):
                return workload
        return next(filter(wanted, self._installed_evidence().workloads), None)

    def _declared_commands(self) -> dict[str, CommandSpec]:
        if self._commands is None:
            self._commands = self._installed_evidence().commands
        return self._commands

    def _declared_reads(self) -> dict[str, NvmlRead]:
        if self._nvml_reads is None:
            self._nvml_reads = self._installed_evidence().nvml_reads
        return self._nvml_reads

    def _installed_evidence(self) -> DeclaredEvidence:
        """What every installed check declares (sources made without a run's selection)."""
        if self._installed is None:
            find = self._find_installed
            self._installed = find() if find is not None else DeclaredEvidence()
        return self._installed

    def _timeout(self, spec: CommandSpec) -> float:
        limit = self.options.command_timeout_s
        return limit if spec.timeout_s is None else min(spec.timeout_s, limit)

    def log_files(self, folder: str) -> list[Path]:
        return list(self.options.log_paths.get(folder, []))

    def _bandwidth(self) -> Artifact:
        """The bandwidth probe's record, measured after the sampling window (the copies must
        not show in its telemetry) and with the --load process stopped (it would share the
        GPUs); only with --bandwidth or --load."""
        if self.options.bandwidth_s is None:
            return Artifact(
                BANDWIDTH_JSON, None, BANDWIDTH_JSON, reason="measured only with --bandwidth"
            )
        if self.driver().state != "present":
            return Artifact(BANDWIDTH_JSON, None, BANDWIDTH_JSON, reason=self.driver().detail)
        if self.options.bandwidth_gpus == ():
            why = "not run: no GPU of its phase was left to load (each one's reason is its own)"
            return Artifact(BANDWIDTH_JSON, None, BANDWIDTH_JSON, reason=why)
        workload = self._declared_workload(lambda w: w.record == BANDWIDTH_JSON)
        if workload is None:
            why = f"no installed check declares the workload that measures {BANDWIDTH_JSON}"
            return Artifact(BANDWIDTH_JSON, None, BANDWIDTH_JSON, reason=why)
        self.gpu_snapshot()
        if self._load is not None:
            self._load.stop()
        from ..workloads.bandwidth import run_probe

        return run_probe(
            workload.module, self.options.bandwidth_s, self.options.bandwidth_gpus, self.stopped
        )

    def meta(self) -> dict[str, Any]:
        return {
            "host": node_name(),
            "kernel": platform.release(),
            "boot_id": _first_line("/proc/sys/kernel/random/boot_id"),
            "uptime_s": _uptime(),
            "sitscheck_version": __version__,
            "nvidia_driver": {"state": self.driver().state, "detail": self.driver().detail},
        }

    def last_known(self) -> LastKnown | None:
        return None  # a daemon run's sources carry its state's (`daemon.follow`)

    def close(self) -> None:
        if self._load is not None:
            self._load.stop()
        if self._nvml is not None:
            self._nvml.shutdown()


def _as_artifact(name: str, result: CommandResult) -> Artifact:
    reason = result.failure_reason()
    if reason is not None:
        return Artifact(name, None, result.display, reason=reason, timed_out=result.timed_out)
    return Artifact(name, result.stdout, result.display, truncated=result.truncated)


def _first_line(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.readline().strip() or None
    except OSError:
        return None


def _uptime() -> float | None:
    text = _first_line("/proc/uptime")
    try:
        return float(text.split()[0]) if text else None
    except ValueError:
        return None
