"""What the parent reads of each GPU through NVML for an acceptance run: the GPUs and their
identity, whether they are free to load (no other process, MIG off), memory in use, ECC and
row-remap state around the memory test, and the soak's 1 Hz samples. Every call goes through
`sources.nvml.Nvml` (under a deadline; a failure is a reading with its state, never a value)."""

from __future__ import annotations

import threading
import time
from typing import Any

from ..sources.gpu_snapshot import CLOCK_SM, read_sample
from ..sources.nvml import Nvml
from ..sources.nvml_record import GpuRecorder, milli, normalise_bus_id, text
from ..threads import start_daemon
from .children import Target

ECC_CORRECTED, ECC_UNCORRECTED, ECC_VOLATILE = 0, 1, 0
RETIRED_SBE, RETIRED_DBE = 0, 1
# nvmlDeviceGetViolationStatus policies: seconds each clock limit held the GPU back
VIOLATION_POLICIES = {"power": 0, "thermal": 1, "sync_boost": 2, "board_limit": 3,
                      "low_utilization": 4, "reliability": 5}  # fmt: skip


class NodeGpus:
    """The node's GPUs as NVML sees them: handles by index."""

    def __init__(self, nvml: Nvml | None) -> None:
        self.nvml = nvml
        self.handles: dict[int, Any] = {}
        self.targets: list[Target] = []
        self.unavailable: str | None = None  # why there are none (NVML could not be used)
        self.unreachable: dict[int, str] = {}  # GPU index -> why no load goes on it (lost)
        if nvml is None:
            return
        count = nvml.read("nvmlDeviceGetCount")
        if not count.ok:
            raise RuntimeError(f"NVML cannot count the GPUs: {count.detail or count.state}")
        for index in range(int(count.value or 0)):
            handle = nvml.read("nvmlDeviceGetHandleByIndex", index)
            if not handle.ok:  # a lost GPU: the others are still loaded, its phases say why
                self.targets.append(Target(index=index, uuid="", pci_bus_id=None, name=None))
                self.unreachable[index] = (
                    f"not run: NVML cannot reach GPU {index}: {handle.detail or handle.state}"
                )
                continue
            self.handles[index] = handle.value
            pci = nvml.read("nvmlDeviceGetPciInfo", handle.value)
            bus = text(getattr(pci.value, "busId", None)) if pci.ok else None
            self.targets.append(
                Target(
                    index=index,
                    uuid=text(nvml.read("nvmlDeviceGetUUID", handle.value).value) or "",
                    pci_bus_id=normalise_bus_id(bus),
                    name=text(nvml.read("nvmlDeviceGetName", handle.value).value),
                )
            )

    @classmethod
    def empty(cls, why: str) -> NodeGpus:
        """No GPU reachable (NVML could not be used, `why`): no phase runs anywhere."""
        node = cls(None)
        node.unavailable = why
        return node

    def close(self) -> None:
        if self.nvml is not None:
            self.nvml.shutdown()

    @property
    def _nvml(self) -> Nvml:
        assert self.nvml is not None
        return self.nvml

    def busy_with(self, index: int) -> list[str]:
        """The processes (pid and name) using GPU `index`, compute and graphics."""
        found: list[str] = []
        for function in ("nvmlDeviceGetComputeRunningProcesses",
                         "nvmlDeviceGetGraphicsRunningProcesses"):  # fmt: skip
            reading = self._nvml.read(function, self.handles[index])
            for process in reading.value or [] if reading.ok else []:
                pid = getattr(process, "pid", None)
                found.append(f"pid {pid}")
        return sorted(set(found))

    def mig_enabled(self, index: int) -> bool:
        reading = self._nvml.read("nvmlDeviceGetMigMode", self.handles[index])
        if not reading.ok or not isinstance(reading.value, list | tuple) or not reading.value:
            return False  # not supported (pre-Ampere) or not readable: no MIG
        return bool(reading.value[0])

    def memory_used(self, index: int) -> int | None:
        if index not in self.handles:
            return None
        reading = self._nvml.read("nvmlDeviceGetMemoryInfo", self.handles[index])
        return _int(getattr(reading.value, "used", None)) if reading.ok else None

    def ecc_state(self, index: int) -> dict[str, Any] | None:
        """facts.md's ecc_before/ecc_after shape, or None where the GPU has no ECC reporting."""
        handle = self.handles[index]
        read = self._nvml.read
        counts = [
            read("nvmlDeviceGetTotalEccErrors", handle, kind, ECC_VOLATILE)
            for kind in (ECC_CORRECTED, ECC_UNCORRECTED)
        ]
        corrected, uncorrected = (_int(c.value) if c.ok else None for c in counts)
        if corrected is None or uncorrected is None:
            return None
        remap = read("nvmlDeviceGetRemappedRows", handle)
        rows = remap.value if remap.ok and isinstance(remap.value, list | tuple) else None
        retired = 0
        for cause in (RETIRED_SBE, RETIRED_DBE):
            pages = read("nvmlDeviceGetRetiredPages", handle, cause)
            retired += len(pages.value or []) if pages.ok else 0
        return {
            "volatile_corrected": corrected,
            "volatile_uncorrected": uncorrected,
            "remap_pending": bool(rows[2]) if rows and len(rows) >= 4 else False,
            "remap_failure": bool(rows[3]) if rows and len(rows) >= 4 else False,
            "retired_pages": retired,
        }

    def max_sm_clock(self, index: int) -> int | None:
        reading = self._nvml.read("nvmlDeviceGetMaxClockInfo", self.handles[index], CLOCK_SM)
        return _int(reading.value) if reading.ok else None

    def violations_ns(self, index: int) -> dict[str, int]:
        found: dict[str, int] = {}
        for name, policy in VIOLATION_POLICIES.items():
            reading = self._nvml.read("nvmlDeviceGetViolationStatus", self.handles[index], policy)
            if reading.ok:
                found[name] = int(getattr(reading.value, "violationTime", 0))
        return found

    def sample(self, index: int, at: float) -> dict[str, Any]:
        """One sample of the soak's trace: the run's window's readings (`read_sample`), and
        the power limit (which the soak judges the power against)."""
        handle = self.handles[index]
        rec = GpuRecorder(self._nvml, {})  # what could not be read is None in the sample
        limit = rec.read("power.limit", "nvmlDeviceGetEnforcedPowerLimit", handle)
        return {"t": round(at, 3), **read_sample(rec, handle), "power_limit_w": milli(limit)}


def _int(value: object) -> int | None:
    """An NVML count or clock as an int; None for anything else (never a crash mid-phase)."""
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


class Sampler:
    """Samples the given GPUs every `period_s` on a thread until stopped (the soak's trace)."""

    def __init__(self, gpus: NodeGpus, indices: list[int], period_s: float = 1.0) -> None:
        self.gpus = gpus
        self.indices = indices
        self.period_s = period_s
        self.samples: dict[int, list[dict[str, Any]]] = {i: [] for i in indices}
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Raises `threads.CannotStart` where the system refuses the thread (then no sample is
        taken, and the soak must not run without its trace)."""
        self.started = time.monotonic()
        self._thread = start_daemon(self._run, name="soak-sampler")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.period_s + 5.0)

    def _run(self) -> None:
        tick = self.started
        while not self._stop.is_set():
            now = time.monotonic()
            for index in self.indices:
                self.samples[index].append(self.gpus.sample(index, now - self.started))
            tick += self.period_s
            self._stop.wait(max(tick - time.monotonic(), 0.0))
