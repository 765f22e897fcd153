"""Read every GPU through NVML once per run: inventory, counters, and a sampled window.

The result is a plain JSON-able dict, the content of a bundle's `nvml.json` (format
`sitscheck-nvml`, version 1), so the GPU checks are pure functions of it, live or replayed.
All GPUs are sampled concurrently (one thread each), so an 8-GPU node takes as long as one.
Every reading that is not a real value is recorded in the GPU's `unavailable` map with its
state (`not_supported`, `error`, `timeout`, `gpu_lost`, ...), and failures other than "not
supported" in `failures` with the NVML call and its error: missing is never zero.
Beside its own readings, each GPU's thread makes the calls the selected checks declare
(`NvmlRead`, `nvml_reads`), each value under the key its check chose.
The `--load` workload (`workloads.load`) is started by the live sources before the window opens.
Every thread started here carries the caller's context (`start_daemon(in_context=True)`):
its NVML calls run under the deadline of the check that asked for the snapshot (`nvml.Nvml`).
A thread the system refuses (`ulimit -v`) fails the whole snapshot (`CannotStart`, once every
thread that did start has ended): a GPU sampled in part is never judged as if whole.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

from msgspec import Struct, field

from ..contract.declarations import NvmlRead
from ..threads import CannotStart, start_daemon
from .nvml import Nvml, Reading
from .nvml_fields import read_fields
from .nvml_memory import MemoryReader
from .nvml_reads import read_declared
from .nvml_record import GpuRecorder, flag, milli, normalise_bus_id, text
from .window_counters import CounterSchedule, read_counters_in_window

FORMAT = "sitscheck-nvml"
VERSION = 1

# NVML enum values (stable across NVML versions; named here so the snapshot does not depend
# on the binding exposing every constant).
CLOCK_SM, CLOCK_MEM = 1, 2
TEMP_GPU = 0
THRESHOLD = {"shutdown_c": 0, "slowdown_c": 1, "mem_max_c": 2, "gpu_max_c": 3}
ECC_CORRECTED, ECC_UNCORRECTED = 0, 1
ECC_VOLATILE, ECC_AGGREGATE = 0, 1
PCIE_TX, PCIE_RX = 0, 1
NVLINK_MAX_LINKS = 18
FIELD_MEMORY_TEMP = 82
FIELD_RECOVERY_ACTION = 230  # NVML_FI_DEV_GET_GPU_RECOVERY_ACTION
IO_PERIOD_S = 1.0
P2P_NVLINK = 2  # NVML_P2P_CAPS_INDEX_NVLINK
# NVML_GPM_METRIC_* ids; the NVLink totals are MiB/s over every link (nvml.h)
GPM_METRICS = {
    "sm_util": 2,
    "sm_occupancy": 3,
    "tensor_active": 5,
    "dram_bw_util": 10,
    "nvlink_rx_mib_s": 60,
    "nvlink_tx_mib_s": 61,
}
# The `unavailable` key under which a metric NVML does not give is noted (the NVLink totals
# with the NVLink throughput: the window's counters stand in for them).
GPM_KEYS = {"nvlink_rx_mib_s": "nvlink_throughput.gpm", "nvlink_tx_mib_s": "nvlink_throughput.gpm"}
RETIRED_CAUSES = {"sbe": 0, "dbe": 1}
TOPOLOGY_LEVELS = {
    0: "internal",
    10: "single",
    20: "multiple",
    30: "hostbridge",
    40: "node",
    50: "system",
}


def collect_snapshot(
    nvml: Nvml,
    window_s: float,
    interval_s: float = 0.2,
    on_window: Callable[[], None] | None = None,
    reads: Sequence[NvmlRead] = (),
) -> dict[str, Any]:
    """Inventory and sample every GPU. `on_window` is called as the window starts; `reads`:
    the calls the checks declare, made for every GPU with its inventory."""
    snapshot: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "collected_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "window_s": window_s,
        "interval_s": interval_s,
        "driver_version": text(nvml.read("nvmlSystemGetDriverVersion").value),
        "nvml_version": text(nvml.read("nvmlSystemGetNVMLVersion").value),
        "cuda_driver_version": nvml.read("nvmlSystemGetCudaDriverVersion").value,
    }
    count = nvml.read("nvmlDeviceGetCount")
    snapshot["device_count"] = count.value
    if not count.ok:
        snapshot["error"] = count.detail
        snapshot["gpus"] = []
        return snapshot
    handles: dict[int, Any] = {}
    gpus: list[dict[str, Any]] = []
    for index in range(int(count.value or 0)):
        gpu: dict[str, Any] = {"index": index}
        handle = nvml.read("nvmlDeviceGetHandleByIndex", index)
        if not handle.ok:
            gpu["lost"] = {"state": handle.state, "detail": handle.detail}
        else:
            handles[index] = handle.value
        gpus.append(gpu)
    snapshot["gpus"] = gpus
    phases: dict[str, float] = {}
    snapshot["phases"] = phases
    # The window starts now, for every GPU: each GPU's thread takes its inventory, then
    # samples until the common deadline. The slow readings (inventory calls, the GPU pairs,
    # ~19 ms each, 28 on 8 GPUs; the counters read at both ends, see window_counters) are
    # serialised across GPUs by the driver: inside the window they cost it no extra time.
    started = time.monotonic()
    if on_window is not None:
        on_window()
    pairs = start_daemon(_read_pairs, nvml, handles, snapshot, name="nvml-pairs", in_context=True)
    deadline = started + max(window_s, 0.0)
    live = [g for g in gpus if g["index"] in handles and "lost" not in g]
    window = _Window(
        deadline,
        interval_s,
        threading.Lock(),
        CounterSchedule(len(live), started, deadline),
        tuple(reads),
    )
    try:
        _each_gpu(live, handles, lambda g, h: _inventory_and_sample(nvml, g, h, window))
    finally:
        pairs.join()
    if window.refused:  # a GPU's counters went unread: no GPU's window is judged in part
        raise CannotStart(window.refused[0])
    phases["inventory_s"] = round(max(window.inventoried.values(), default=started) - started, 3)
    phases["sampling_s"] = round(time.monotonic() - started, 3)
    return snapshot


def _each_gpu(
    live: list[dict[str, Any]], handles: dict[int, Any], work: Callable[[dict[str, Any], Any], None]
) -> None:
    """`work(gpu, handle)` on one thread per GPU, all at once; every thread that started has
    ended when this returns or raises (CannotStart: the GPUs after it got none)."""
    threads: list[threading.Thread] = []
    try:
        for gpu in live:
            index = gpu["index"]
            threads.append(
                start_daemon(work, gpu, handles[index], name=f"nvml-gpu{index}", in_context=True)
            )
    finally:
        for thread in threads:
            thread.join()


def _inventory(nvml: Nvml, gpu: dict[str, Any], handle: Any, reads: Sequence[NvmlRead]) -> None:
    rec = GpuRecorder(nvml, gpu)
    gpu["name"] = text(rec.read("name", "nvmlDeviceGetName", handle))
    gpu["uuid"] = text(rec.read("uuid", "nvmlDeviceGetUUID", handle))
    pci = rec.read("pci", "nvmlDeviceGetPciInfo", handle)
    gpu["pci_bus_id"] = normalise_bus_id(text(getattr(pci, "busId", None)))
    device_id = getattr(pci, "pciDeviceId", None)
    gpu["pci_device_id"] = f"{device_id & 0xFFFFFFFF:08x}" if isinstance(device_id, int) else None
    gpu["serial"] = text(rec.read("serial", "nvmlDeviceGetSerial", handle))
    gpu["vbios"] = text(rec.read("vbios", "nvmlDeviceGetVbiosVersion", handle))
    gpu["inforom_image"] = text(
        rec.read("inforom_image", "nvmlDeviceGetInforomImageVersion", handle)
    )
    gpu["pcie"] = {
        "gen_current": rec.read("pcie.gen_current", "nvmlDeviceGetCurrPcieLinkGeneration", handle),
        "gen_max": rec.read("pcie.gen_max", "nvmlDeviceGetMaxPcieLinkGeneration", handle),
        "gen_device_max": rec.read(
            "pcie.gen_device_max", "nvmlDeviceGetGpuMaxPcieLinkGeneration", handle
        ),
        "width_current": rec.read("pcie.width_current", "nvmlDeviceGetCurrPcieLinkWidth", handle),
        "width_max": rec.read("pcie.width_max", "nvmlDeviceGetMaxPcieLinkWidth", handle),
    }
    gpu["power"] = {
        "enforced_limit_w": milli(
            rec.read("power.limit", "nvmlDeviceGetEnforcedPowerLimit", handle)
        ),
        "default_limit_w": milli(
            rec.read("power.default_limit", "nvmlDeviceGetPowerManagementDefaultLimit", handle)
        ),
    }
    gpu["temperature"] = {
        key: rec.read(f"temperature.{key}", "nvmlDeviceGetTemperatureThreshold", handle, code)
        for key, code in THRESHOLD.items()
    }
    gpu["clocks_max_mhz"] = {
        "sm": rec.read("clocks_max.sm", "nvmlDeviceGetMaxClockInfo", handle, CLOCK_SM),
        "mem": rec.read("clocks_max.mem", "nvmlDeviceGetMaxClockInfo", handle, CLOCK_MEM),
    }
    gpu["ecc"] = _ecc(rec, handle)
    gpu["remap"] = _remap(rec, handle)
    gpu["retired_pages"] = _retired(rec, handle)
    gpu["nvlink"] = _nvlinks(rec, handle)
    gpu["recovery_action"] = _field_value(rec, "recovery_action", handle, FIELD_RECOVERY_ACTION)
    read_declared(rec, handle, reads)


def _ecc(rec: GpuRecorder, handle: Any) -> dict[str, Any]:
    mode = rec.read("ecc.mode", "nvmlDeviceGetEccMode", handle)
    current = flag(mode[0]) if isinstance(mode, list | tuple) and mode else None
    counts: dict[str, Any] = {"mode_enabled": current}
    for scope, counter in (("volatile", ECC_VOLATILE), ("aggregate", ECC_AGGREGATE)):
        counts[scope] = {
            kind: rec.read(
                f"ecc.{scope}.{kind}", "nvmlDeviceGetTotalEccErrors", handle, etype, counter
            )
            for kind, etype in (("corrected", ECC_CORRECTED), ("uncorrected", ECC_UNCORRECTED))
        }
    return counts


def _remap(rec: GpuRecorder, handle: Any) -> dict[str, Any] | None:
    rows = rec.read("remap", "nvmlDeviceGetRemappedRows", handle)
    if not isinstance(rows, list | tuple) or len(rows) < 4:
        return None
    result: dict[str, Any] = {
        "corrected": rows[0],
        "uncorrected": rows[1],
        "pending": bool(rows[2]),
        "failure": bool(rows[3]),
    }
    histogram = rec.read("remap.histogram", "nvmlDeviceGetRowRemapperHistogram", handle)
    if histogram is not None:
        result["histogram"] = {
            name: getattr(histogram, name, None)
            for name in ("max", "high", "partial", "low", "none")
        }
    return result


def _retired(rec: GpuRecorder, handle: Any) -> dict[str, Any] | None:
    pending = rec.read("retired_pages.pending", "nvmlDeviceGetRetiredPagesPendingStatus", handle)
    if pending is None:
        return None
    counts = {
        cause: len(
            rec.read(f"retired_pages.{cause}", "nvmlDeviceGetRetiredPages", handle, code) or []
        )
        for cause, code in RETIRED_CAUSES.items()
    }
    return {"pending": flag(pending), **counts}


def _nvlinks(rec: GpuRecorder, handle: Any) -> list[dict[str, Any]]:
    links: list[dict[str, Any]] = []
    for link in range(NVLINK_MAX_LINKS):
        state = rec.nvml.read("nvmlDeviceGetNvLinkState", handle, link)
        if state.state == "not_supported" or (not state.ok and link == 0):
            if link == 0:
                rec.unavailable.setdefault("nvlink", state.state)
            break
        entry: dict[str, Any] = {"link": link, "active": flag(state.value) if state.ok else None}
        if entry["active"]:
            remote = rec.read(
                f"nvlink.{link}.remote", "nvmlDeviceGetNvLinkRemotePciInfo", handle, link
            )
            entry["remote_pci_bus_id"] = normalise_bus_id(text(getattr(remote, "busId", None)))
            entry["version"] = rec.read(
                f"nvlink.{link}.version", "nvmlDeviceGetNvLinkVersion", handle, link
            )
        links.append(entry)
    return links


def _field_value(rec: GpuRecorder, key: str, handle: Any, field_id: int) -> Any:
    return rec.keep(key, read_fields(rec.nvml, handle, [field_id])[0])


def _read_pairs(nvml: Nvml, handles: dict[int, Any], snapshot: dict[str, Any]) -> None:
    started = time.monotonic()
    snapshot["pairs"] = _pairs(nvml, handles)
    snapshot["phases"]["pairs_s"] = round(time.monotonic() - started, 3)


def _pairs(nvml: Nvml, handles: dict[int, Any]) -> list[dict[str, Any]]:
    pairs = []
    indices = sorted(handles)
    for position, a in enumerate(indices):
        for b in indices[position + 1 :]:
            level = nvml.read("nvmlDeviceGetTopologyCommonAncestor", handles[a], handles[b])
            p2p = nvml.read("nvmlDeviceGetP2PStatus", handles[a], handles[b], P2P_NVLINK)
            pairs.append(
                {
                    "a": a,
                    "b": b,
                    "common_ancestor": TOPOLOGY_LEVELS.get(int(level.value or 0), str(level.value))
                    if level.ok
                    else None,
                    "p2p_nvlink": (p2p.value == 0) if p2p.ok else None,
                }
            )
    return pairs


class _Window(Struct, frozen=True):
    """The sampling window every GPU shares."""

    deadline: float  # time.monotonic() at which every GPU's sampling ends
    interval_s: float
    gpm_lock: threading.Lock  # NVML's GPM calls crash when two GPUs' threads overlap
    counters: CounterSchedule
    reads: tuple[NvmlRead, ...]  # the calls the checks declare, made with each GPU's inventory
    inventoried: dict[int, float] = field(default_factory=dict)  # GPU index -> when done
    refused: list[str] = field(default_factory=list)  # the threads the system would not start


def _inventory_and_sample(nvml: Nvml, gpu: dict[str, Any], handle: Any, window: _Window) -> None:
    """One GPU's thread: its inventory, then samples until the window's end while its
    counters are read on a second thread."""
    _inventory(nvml, gpu, handle, window.reads)
    window.inventoried[gpu["index"]] = time.monotonic()
    if "lost" in gpu or nvml.stuck_at is not None:
        window.counters.leave()  # no first reading: the others need not wait for it
        return
    try:
        counters = start_daemon(
            read_counters_in_window,
            GpuRecorder(nvml, gpu),
            handle,
            window.counters,
            name=f"nvml-gpu{gpu['index']}-counters",
            in_context=True,
        )
    except CannotStart as exc:  # the snapshot fails, naming it (`collect_snapshot`)
        window.counters.leave()
        window.refused.append(str(exc))
        return
    _sample_window(nvml, gpu, handle, window)
    counters.join()  # every NVML call it makes is under a deadline


def _sample_window(nvml: Nvml, gpu: dict[str, Any], handle: Any, window: _Window) -> None:
    rec = GpuRecorder(nvml, gpu)
    interval_s, deadline = window.interval_s, window.deadline
    gpm = _GpmSampler(rec, handle, window.gpm_lock)
    memory = MemoryReader(rec, handle)
    samples: list[dict[str, Any]] = []
    started = time.monotonic()
    gpm.take()
    io_due = started
    while True:
        now = time.monotonic()
        with_io = now >= io_due
        if with_io:  # each throughput read blocks ~20 ms in the driver: once a second is enough
            io_due = now + IO_PERIOD_S
        sample = _sample(rec, handle, round(now - started, 3), with_io)
        if with_io:
            sample.update(memory.read())
        samples.append(sample)
        stuck = nvml.stuck_at is not None
        if "lost" in gpu or stuck or time.monotonic() + interval_s > deadline:
            break
        time.sleep(interval_s)
        gpm.take_if_due()
    gpm.take(final=True)
    gpu["samples"] = samples
    gpu["gpm"] = gpm.metrics
    gpu["sampled_s"] = round(time.monotonic() - started, 3)


def _sample(rec: GpuRecorder, handle: Any, at: float, with_io: bool) -> dict[str, Any]:
    util = rec.read("utilization", "nvmlDeviceGetUtilizationRates", handle)
    sample = {
        "t": at,
        "util_gpu": getattr(util, "gpu", None),
        "util_mem": getattr(util, "memory", None),
        **read_sample(rec, handle),
    }
    if with_io:
        sample["pcie_tx_kbps"] = rec.read("pcie.tx", "nvmlDeviceGetPcieThroughput", handle, PCIE_TX)
        sample["pcie_rx_kbps"] = rec.read("pcie.rx", "nvmlDeviceGetPcieThroughput", handle, PCIE_RX)
    return sample


def read_sample(rec: GpuRecorder, handle: Any) -> dict[str, Any]:
    """One GPU's power, clocks, temperatures and clock-event reasons now: a sample of the run's
    window (`_sample`) and of the acceptance soak's trace (`workloads.gpus.NodeGpus.sample`) alike.
    A reading that is no value is None, noted in `rec`'s record."""
    reasons = rec.nvml.read("nvmlDeviceGetCurrentClocksEventReasons", handle)
    if not reasons.ok:
        reasons = rec.nvml.read("nvmlDeviceGetCurrentClocksThrottleReasons", handle)
    return {
        "power_w": milli(rec.read("power.draw", "nvmlDeviceGetPowerUsage", handle)),
        "sm_clock_mhz": rec.read("clocks.sm", "nvmlDeviceGetClockInfo", handle, CLOCK_SM),
        "mem_clock_mhz": rec.read("clocks.mem", "nvmlDeviceGetClockInfo", handle, CLOCK_MEM),
        "temp_c": rec.read("temperature.gpu", "nvmlDeviceGetTemperature", handle, TEMP_GPU),
        "mem_temp_c": _field_value(rec, "temperature.memory", handle, FIELD_MEMORY_TEMP),
        "clock_event_reasons": rec.keep("clock_event_reasons", reasons),
    }


class _GpmSampler:
    """GPM (Hopper and newer): metrics between consecutive device samples ~1 s apart."""

    PERIOD_S = 1.0

    def __init__(self, rec: GpuRecorder, handle: Any, lock: threading.Lock) -> None:
        self.rec = rec
        self.handle = handle
        self.lock = lock
        self.metrics: list[dict[str, Any]] = []
        self.previous: Any = None
        self.taken_at = 0.0
        support = rec.nvml.read("nvmlGpmQueryDeviceSupport", handle)
        supported = getattr(support.value, "isSupportedDevice", 0) if support.ok else 0
        self.enabled = bool(supported)
        if not self.enabled:
            rec.unavailable.setdefault("gpm", support.state if not support.ok else "not_supported")

    def take_if_due(self) -> None:
        if self.enabled and time.monotonic() - self.taken_at >= self.PERIOD_S:
            self.take()

    def take(self, final: bool = False) -> None:
        if not self.enabled:
            return
        if final and self.previous is not None and time.monotonic() - self.taken_at < 0.2:
            return
        with self.lock:
            self._take(final)

    def _take(self, final: bool) -> None:
        lib = self.rec.nvml.lib
        sample = self.rec.read("gpm", "nvmlGpmSampleAlloc")
        got = self.rec.nvml.read("nvmlGpmSampleGet", self.handle, sample) if sample else None
        if got is None or not got.ok:
            self.rec.unavailable.setdefault("gpm", got.state if got else "error")
            self.enabled = False
            return
        now = time.monotonic()
        if self.previous is not None:
            self.metrics.append(self._between(lib, self.previous, sample, now - self.taken_at))
            self.rec.nvml.read("nvmlGpmSampleFree", self.previous)
        self.previous, self.taken_at = sample, now
        if final:
            self.rec.nvml.read("nvmlGpmSampleFree", sample)
            self.previous = None

    def _between(self, lib: Any, first: Any, second: Any, seconds: float) -> dict[str, Any]:
        request = lib.c_nvmlGpmMetricsGet_t()
        request.version = lib.NVML_GPM_METRICS_GET_VERSION
        request.numMetrics = len(GPM_METRICS)
        request.sample1 = first
        request.sample2 = second
        for slot, metric_id in enumerate(GPM_METRICS.values()):
            request.metrics[slot].metricId = metric_id
        nvml = self.rec.nvml
        result = nvml.read("nvmlGpmMetricsGet", request)
        values: dict[str, Any] = {"seconds": round(seconds, 3)}
        for slot, name in enumerate(GPM_METRICS):
            metric = request.metrics[slot]
            code = getattr(metric, "nvmlReturn", None)
            state = nvml.return_state(code) if result.ok else result.state
            values[name] = round(float(metric.value), 3) if state == "ok" else None
            if state != "ok" and name in GPM_KEYS:  # the others: "gpm" as a whole
                detail = result.detail or f"nvmlGpmMetricsGet({name}): {nvml.error_name(code)}"
                self.rec.keep(GPM_KEYS[name], Reading(None, state, detail))
        return values
