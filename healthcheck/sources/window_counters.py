"""The counters read at both ends of the sampling window, read *inside* it.

NVLink error counters, clock-violation times and the PCIe replay counter are slow in the
driver: on an H200 (driver 580) one `nvmlDeviceGetNvLinkErrorCounter` takes ~0.9 ms and a GPU
has 18 links × 4 counters; a violation-status read ~0.8 ms; and calls for different GPUs
serialise on the driver's lock (two threads on two GPUs took 3.4× one thread on one). Read
before and after the window, they cost ~70 ms per GPU twice, in series across GPUs: the
snapshot grew by ~130 ms per GPU beyond the window (tools/device/nvml_fields_probe.py).

So each GPU reads them on its own thread while its samples are taken: the first reading early
in the window; the last one started as long before the window's end as the first readings of
all GPUs took (counted from the window's start), so that it ends with the window. The interval
between the two readings is recorded per GPU (`counters_s`); rates are per that interval.

Read the same way: the total energy counter (`nvmlDeviceGetTotalEnergyConsumption`, mJ since
the driver loaded) and, on a GPU with NVLinks, the NVLink data throughput counters (field
values NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX/TX, KiB, summed over every link by NVML's
all-links scope; where a driver refuses that scope, summed here over the active links).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from .nvml import Reading
from .nvml_fields import SCOPE_ALL_LINKS, Field, read_fields
from .nvml_record import GpuRecorder

NVLINK_ERRORS = {"replay": 0, "recovery": 1, "crc_flit": 2, "crc_data": 3}
NVLINK_THROUGHPUT_FIELDS = {"rx": 139, "tx": 138}  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX/TX
NVLINK_THROUGHPUT_KEY = "nvlink_throughput.counters"
VIOLATION_POLICIES = {
    "power": 0,
    "thermal": 1,
    "sync_boost": 2,
    "board_limit": 3,
    "low_utilization": 4,
    "reliability": 5,
}


class CounterSchedule:
    """When each GPU's last reading starts: shared by the GPUs of one snapshot."""

    def __init__(self, parties: int, started: float, deadline: float) -> None:
        self._pending = parties
        self._changed = threading.Condition()
        self.started = started
        self.deadline = deadline

    def leave(self) -> None:
        """This GPU's first reading is done, or it will make none (lost, failed)."""
        with self._changed:
            self._pending -= 1
            self._changed.notify_all()

    def last_reading_at(self) -> float:
        """Wait for every GPU's first reading (at most until the deadline); then: when to
        start the last one, so that it ends with the window."""
        with self._changed:
            self._changed.wait_for(
                lambda: self._pending <= 0, timeout=max(self.deadline - time.monotonic(), 0.0)
            )
        now = time.monotonic()
        return max(self.deadline - (now - self.started), now)


def read_counters_in_window(rec: GpuRecorder, handle: Any, schedule: CounterSchedule) -> None:
    """The first reading now, the last at the scheduled time; both kept in the GPU record."""
    gpu = rec.gpu
    try:
        first_at = _read(rec, handle, "start")
    finally:
        schedule.leave()
    pause = schedule.last_reading_at() - time.monotonic()
    if pause > 0:
        time.sleep(pause)
    if "lost" in gpu or rec.nvml.stuck_at is not None:
        return
    last_at = _read(rec, handle, "end")
    gpu["counters_s"] = round(last_at - first_at, 3)


def _read(rec: GpuRecorder, handle: Any, end: str) -> float:
    """One reading of every counter; returns the midpoint of the time it took."""
    gpu = rec.gpu
    began = time.monotonic()
    gpu.setdefault("pcie", {})[f"replay_counter_{end}"] = rec.read(
        "pcie.replay", "nvmlDeviceGetPcieReplayCounter", handle
    )
    gpu[f"violations_ns_{end}"] = _violations(rec, handle)
    gpu[f"energy_mj_{end}"] = rec.read("energy", "nvmlDeviceGetTotalEnergyConsumption", handle)
    active = [e["link"] for e in gpu.get("nvlink") or [] if e.get("active")]
    throughput = _nvlink_throughput(rec, handle, active) if active else None
    if throughput:
        gpu[f"nvlink_throughput_kib_{end}"] = throughput
    for entry in gpu.get("nvlink") or []:
        entry["errors" if end == "start" else "errors_end"] = _nvlink_errors(
            rec, handle, entry["link"]
        )
    return (began + time.monotonic()) / 2


def _nvlink_errors(rec: GpuRecorder, handle: Any, link: int) -> dict[str, Any]:
    return {
        name: rec.nvml.read("nvmlDeviceGetNvLinkErrorCounter", handle, link, code).value
        for name, code in NVLINK_ERRORS.items()
    }


def _nvlink_throughput(rec: GpuRecorder, handle: Any, links: list[int]) -> dict[str, Any]:
    """KiB received and sent over every link; `links_summed` where the sum is ours."""
    names = list(NVLINK_THROUGHPUT_FIELDS)
    fields: list[Field] = [(f, SCOPE_ALL_LINKS) for f in NVLINK_THROUGHPUT_FIELDS.values()]
    readings = read_fields(rec.nvml, handle, fields)
    totals = _counts(readings)
    if totals is not None:
        return dict(zip(names, totals, strict=True))
    failed = next((r for r in readings if not r.ok), None)
    if failed is None or failed.state not in ("not_supported", "error"):
        rec.keep(NVLINK_THROUGHPUT_KEY, failed or Reading(None, "error", "no count"))
        return {}
    per_link: list[Field] = [(f, link) for f in NVLINK_THROUGHPUT_FIELDS.values() for link in links]
    by_link = _counts(read_fields(rec.nvml, handle, per_link))
    if by_link is None:
        rec.keep(NVLINK_THROUGHPUT_KEY, failed)  # the all-links answer says why
        return {}
    out: dict[str, Any] = {
        name: sum(by_link[i * len(links) : (i + 1) * len(links)]) for i, name in enumerate(names)
    }
    out["links_summed"] = len(links)
    return out


def _counts(readings: list[Reading[Any]]) -> list[int] | None:
    """Every reading's count, or None unless each is one."""
    counts = [r.value for r in readings if r.ok and isinstance(r.value, int)]
    if len(counts) != len(readings) or any(isinstance(c, bool) for c in counts):
        return None
    return counts


def _violations(rec: GpuRecorder, handle: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, policy in VIOLATION_POLICIES.items():
        status = rec.nvml.read("nvmlDeviceGetViolationStatus", handle, policy)
        out[name] = getattr(status.value, "violationTime", None) if status.ok else None
    return out
