"""A replaying stand-in for the `pynvml` module, built from a recorded `nvml.json`.

`FakePynvml(recording)` answers the NVML calls `sitscheck.sources.gpu_snapshot` makes with the
values the recording holds, in NVML's own shapes: milliwatts, `00000000:19:00.0` bus ids,
structs with `busId`/`gpu`/`violationTime`..., counters that differ between their first and
later reads (`*_start` / `*_end`), one sample row per sampling call. A reading the recording
marks unavailable (`unavailable: {"retired_pages.pending": "not_supported"}`) raises the
matching `NVMLError`. Handing the same recording to `collect_snapshot` must give it back.

Fault hooks, for tests:

- `block(function, gpu=None)`: that call (on that GPU, or on any) never returns until
  `release()`; `block_gpu(gpu, from_call=N)`: every call that touches that GPU blocks, from
  its N-th call on (counted as for `lose_gpu`).
- `lose_gpu(gpu, from_call=N)`: from that GPU's N-th call on (0 is its handle lookup, then
  every call taking its handle), raise `NVML_ERROR_GPU_IS_LOST`.
- `fail_init(code)`: `nvmlInit` raises `NVMLError(code)`.
- `gpm_supported=False` makes `nvmlGpmQueryDeviceSupport` raise NOT_SUPPORTED.

`calls` records every call (monotonic time, function, GPU index, thread name).
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# NVML return codes (nvml.h); test_fake_pynvml checks them against the real binding.
ERROR_CODES: dict[str, int] = {
    "NVML_ERROR_UNINITIALIZED": 1,
    "NVML_ERROR_INVALID_ARGUMENT": 2,
    "NVML_ERROR_NOT_SUPPORTED": 3,
    "NVML_ERROR_NO_PERMISSION": 4,
    "NVML_ERROR_ALREADY_INITIALIZED": 5,
    "NVML_ERROR_NOT_FOUND": 6,
    "NVML_ERROR_INSUFFICIENT_SIZE": 7,
    "NVML_ERROR_INSUFFICIENT_POWER": 8,
    "NVML_ERROR_DRIVER_NOT_LOADED": 9,
    "NVML_ERROR_TIMEOUT": 10,
    "NVML_ERROR_IRQ_ISSUE": 11,
    "NVML_ERROR_LIBRARY_NOT_FOUND": 12,
    "NVML_ERROR_FUNCTION_NOT_FOUND": 13,
    "NVML_ERROR_CORRUPTED_INFOROM": 14,
    "NVML_ERROR_GPU_IS_LOST": 15,
    "NVML_ERROR_RESET_REQUIRED": 16,
    "NVML_ERROR_OPERATING_SYSTEM": 17,
    "NVML_ERROR_LIB_RM_VERSION_MISMATCH": 18,
    "NVML_ERROR_IN_USE": 19,
    "NVML_ERROR_MEMORY": 20,
    "NVML_ERROR_NO_DATA": 21,
    "NVML_ERROR_UNKNOWN": 999,
}
_NAME_BY_CODE = {code: name for name, code in ERROR_CODES.items()}

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = ERROR_CODES["NVML_ERROR_UNINITIALIZED"]
NVML_ERROR_INVALID_ARGUMENT = ERROR_CODES["NVML_ERROR_INVALID_ARGUMENT"]
NVML_ERROR_NOT_SUPPORTED = ERROR_CODES["NVML_ERROR_NOT_SUPPORTED"]
NVML_ERROR_NO_PERMISSION = ERROR_CODES["NVML_ERROR_NO_PERMISSION"]
NVML_ERROR_DRIVER_NOT_LOADED = ERROR_CODES["NVML_ERROR_DRIVER_NOT_LOADED"]
NVML_ERROR_TIMEOUT = ERROR_CODES["NVML_ERROR_TIMEOUT"]
NVML_ERROR_LIBRARY_NOT_FOUND = ERROR_CODES["NVML_ERROR_LIBRARY_NOT_FOUND"]
NVML_ERROR_FUNCTION_NOT_FOUND = ERROR_CODES["NVML_ERROR_FUNCTION_NOT_FOUND"]
NVML_ERROR_GPU_IS_LOST = ERROR_CODES["NVML_ERROR_GPU_IS_LOST"]
NVML_ERROR_RESET_REQUIRED = ERROR_CODES["NVML_ERROR_RESET_REQUIRED"]
NVML_ERROR_UNKNOWN = ERROR_CODES["NVML_ERROR_UNKNOWN"]

# The `unavailable` states a snapshot records, as the NVML error that produces each.
CODE_BY_STATE: dict[str, int] = {
    "not_supported": NVML_ERROR_NOT_SUPPORTED,
    "no_permission": NVML_ERROR_NO_PERMISSION,
    "gpu_lost": NVML_ERROR_GPU_IS_LOST,
    "reset_required": NVML_ERROR_RESET_REQUIRED,
    "error": NVML_ERROR_UNKNOWN,
    # a recorded timeout replays as NVML's own timeout error (blocking is `block()`'s job)
    "timeout": NVML_ERROR_TIMEOUT,
}

# NVML enums the snapshot passes (gpu_snapshot names them too; repeated here on purpose:
# the fake follows nvml.h, not the code under test).
_THRESHOLDS = {0: "shutdown_c", 1: "slowdown_c", 2: "mem_max_c", 3: "gpu_max_c"}
_CLOCKS = {1: "sm", 2: "mem"}
_ECC_KINDS = {0: "corrected", 1: "uncorrected"}
_ECC_COUNTERS = {0: "volatile", 1: "aggregate"}
_PCIE_COUNTERS = {0: "tx", 1: "rx"}
_NVLINK_ERRORS = {0: "replay", 1: "recovery", 2: "crc_flit", 3: "crc_data"}
_VIOLATIONS = {
    0: "power",
    1: "thermal",
    2: "sync_boost",
    3: "board_limit",
    4: "low_utilization",
    5: "reliability",
}
_RETIRED = {0: "sbe", 1: "dbe"}
_GPM_METRICS = {
    2: "sm_util",
    3: "sm_occupancy",
    5: "tensor_active",
    10: "dram_bw_util",
    60: "nvlink_rx_mib_s",
    61: "nvlink_tx_mib_s",
}
# GPM metrics whose failure the snapshot notes under a key of its own
_GPM_KEYS = {60: "nvlink_throughput.gpm", 61: "nvlink_throughput.gpm"}
_TOPOLOGY = {
    "internal": 0,
    "single": 10,
    "multiple": 20,
    "hostbridge": 30,
    "node": 40,
    "system": 50,
}
FI_MEMORY_TEMP = 82
FI_RECOVERY_ACTION = 230
FI_NVLINK_THROUGHPUT = {139: "rx", 138: "tx"}  # NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX/TX
SCOPE_ALL_LINKS = 0xFFFFFFFF
MEMORY_V2 = 0x02000028  # pynvml's nvmlMemory_v2
P2P_STATUS_OK = 0
P2P_STATUS_NOT_SUPPORTED = 5
VALUE_TYPE_UNSIGNED_INT = 1
VALUE_TYPE_UNSIGNED_LONG_LONG = 3
VALUE_TYPE_SIGNED_LONG_LONG = 4


class NVMLError(Exception):
    """Like pynvml's: `.value` is the NVML return code; its text is the code's name, or the
    words a test gives (pynvml's own strings, such as "NVML Shared Library Not Found")."""

    def __init__(self, value: int, words: str | None = None) -> None:
        super().__init__(value)
        self.value = value
        self.words = words

    def __str__(self) -> str:
        return self.words or _NAME_BY_CODE.get(self.value, f"NVML error {self.value}")


@dataclass(frozen=True)
class FakeHandle:
    index: int


@dataclass
class FakeGpmSample:
    gpu: int | None = None
    taken_at: float | None = None
    freed: bool = False


@dataclass(frozen=True)
class Call:
    at: float
    function: str
    gpu: int | None
    thread: str


class _GpmMetricsGet:
    """pynvml's `c_nvmlGpmMetricsGet_t`, as plain attributes."""

    def __init__(self) -> None:
        self.version = 0
        self.numMetrics = 0
        self.sample1: Any = None
        self.sample2: Any = None
        self.metrics = [
            SimpleNamespace(metricId=0, nvmlReturn=NVML_ERROR_UNKNOWN, value=0.0) for _ in range(98)
        ]


def load_recording(path: str | Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return data


def nvml_bus_id(bus_id: str | None) -> str | None:
    """`0000:19:00.0` → NVML's `00000000:19:00.0` (8-digit domain, upper-case hex)."""
    if bus_id is None:
        return None
    domain, _, rest = bus_id.partition(":")
    if len(domain) <= 4:
        domain = domain.zfill(8)
    return f"{domain}:{rest}".upper()


@dataclass
class _Faults:
    blocked: set[tuple[str, int | None]] = field(default_factory=set)
    gpu_blocked_from: dict[int, int] = field(default_factory=dict)
    lost: dict[int, int] = field(default_factory=dict)
    init_error: int | None = None
    init_words: str | None = None
    slow: dict[str, float] = field(default_factory=dict)


class FakePynvml:
    """A module-like object: `Nvml(FakePynvml(recording))` reads the recording back."""

    NVMLError = NVMLError
    NVML_SUCCESS = NVML_SUCCESS
    NVML_ERROR_UNINITIALIZED = NVML_ERROR_UNINITIALIZED
    NVML_ERROR_INVALID_ARGUMENT = NVML_ERROR_INVALID_ARGUMENT
    NVML_ERROR_NOT_SUPPORTED = NVML_ERROR_NOT_SUPPORTED
    NVML_ERROR_NO_PERMISSION = NVML_ERROR_NO_PERMISSION
    NVML_ERROR_ALREADY_INITIALIZED = ERROR_CODES["NVML_ERROR_ALREADY_INITIALIZED"]
    NVML_ERROR_NOT_FOUND = ERROR_CODES["NVML_ERROR_NOT_FOUND"]
    NVML_ERROR_INSUFFICIENT_SIZE = ERROR_CODES["NVML_ERROR_INSUFFICIENT_SIZE"]
    NVML_ERROR_INSUFFICIENT_POWER = ERROR_CODES["NVML_ERROR_INSUFFICIENT_POWER"]
    NVML_ERROR_DRIVER_NOT_LOADED = NVML_ERROR_DRIVER_NOT_LOADED
    NVML_ERROR_TIMEOUT = NVML_ERROR_TIMEOUT
    NVML_ERROR_IRQ_ISSUE = ERROR_CODES["NVML_ERROR_IRQ_ISSUE"]
    NVML_ERROR_LIBRARY_NOT_FOUND = NVML_ERROR_LIBRARY_NOT_FOUND
    NVML_ERROR_FUNCTION_NOT_FOUND = NVML_ERROR_FUNCTION_NOT_FOUND
    NVML_ERROR_CORRUPTED_INFOROM = ERROR_CODES["NVML_ERROR_CORRUPTED_INFOROM"]
    NVML_ERROR_GPU_IS_LOST = NVML_ERROR_GPU_IS_LOST
    NVML_ERROR_RESET_REQUIRED = NVML_ERROR_RESET_REQUIRED
    NVML_ERROR_OPERATING_SYSTEM = ERROR_CODES["NVML_ERROR_OPERATING_SYSTEM"]
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = ERROR_CODES["NVML_ERROR_LIB_RM_VERSION_MISMATCH"]
    NVML_ERROR_IN_USE = ERROR_CODES["NVML_ERROR_IN_USE"]
    NVML_ERROR_MEMORY = ERROR_CODES["NVML_ERROR_MEMORY"]
    NVML_ERROR_NO_DATA = ERROR_CODES["NVML_ERROR_NO_DATA"]
    NVML_ERROR_UNKNOWN = NVML_ERROR_UNKNOWN
    NVML_GPM_METRICS_GET_VERSION = 1
    c_nvmlGpmMetricsGet_t = _GpmMetricsGet
    nvmlMemory_v2 = MEMORY_V2

    def __init__(self, recording: dict[str, Any], gpm_supported: bool = True) -> None:
        self.recording = copy.deepcopy(recording)
        self._gpus: dict[int, dict[str, Any]] = {
            int(g["index"]): g for g in self.recording.get("gpus") or []
        }
        self._gpm_supported = gpm_supported
        self._lock = threading.Lock()
        self._driver_lock = threading.Lock()
        self._counters: dict[tuple[Any, ...], int] = defaultdict(int)
        self._device_calls: dict[int, int] = defaultdict(int)
        self._faults = _Faults()
        self._released = threading.Event()
        self.calls: list[Call] = []
        self.initialised = False
        self.init_count = 0
        self.shutdown_count = 0

    # ---- fault hooks -------------------------------------------------------------------

    def block(self, function: str, gpu: int | None = None) -> None:
        """`function` (on GPU `gpu`, or on every GPU) blocks until `release()`."""
        self._faults.blocked.add((function, gpu))

    def block_gpu(self, gpu: int, from_call: int = 0) -> None:
        """Calls touching GPU `gpu`, from its `from_call`-th on, block until `release()`."""
        self._faults.gpu_blocked_from[gpu] = from_call

    def lose_gpu(self, gpu: int, from_call: int = 0) -> None:
        """GPU `gpu` answers GPU_IS_LOST from its `from_call`-th call on (0: handle lookup)."""
        self._faults.lost[gpu] = from_call

    def slow_down(self, function: str, seconds: float) -> None:
        """`function` takes `seconds` in the "driver", one call at a time across all GPUs (as
        the real driver serialises NVLink error counters: tools/device/nvml_fields_probe.py)."""
        self._faults.slow[function] = seconds

    def fail_init(self, code: int = NVML_ERROR_DRIVER_NOT_LOADED, words: str | None = None) -> None:
        self._faults.init_error = code
        self._faults.init_words = words

    def release(self) -> None:
        """Let every blocked call return, and block no more."""
        self._faults.blocked.clear()
        self._faults.gpu_blocked_from.clear()
        self._released.set()

    def calls_to(self, function: str, gpu: int | None = None) -> list[Call]:
        with self._lock:
            return [
                c for c in self.calls if c.function == function and (gpu is None or c.gpu == gpu)
            ]

    # ---- plumbing ----------------------------------------------------------------------

    def _enter(self, function: str, gpus: tuple[int, ...] = (), key: tuple[Any, ...] = ()) -> int:
        """Log, block, lose; returns how many times this exact call was made before."""
        if function not in ("nvmlInit", "nvmlInitWithFlags") and not self.initialised:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)
        with self._lock:
            self.calls.append(
                Call(time.monotonic(), function, gpus[0] if gpus else None, _thread_name())
            )
            numbers = []
            for gpu in gpus:
                numbers.append((gpu, self._device_calls[gpu]))
                self._device_calls[gpu] += 1
            counter = (function, *key)
            seen = self._counters[counter]
            self._counters[counter] += 1
        if self._blocks(function, numbers):
            self._released.wait()
        delay = self._faults.slow.get(function)
        if delay:
            with self._driver_lock:
                time.sleep(delay)
        for gpu, number in numbers:
            start = self._faults.lost.get(gpu)
            if start is not None and number >= start:
                raise NVMLError(NVML_ERROR_GPU_IS_LOST)
        return seen

    def _blocks(self, function: str, numbers: list[tuple[int, int]]) -> bool:
        faults = self._faults
        if self._released.is_set():
            return False
        if (function, None) in faults.blocked:
            return True
        for gpu, number in numbers:
            if (function, gpu) in faults.blocked:
                return True
            start = faults.gpu_blocked_from.get(gpu)
            if start is not None and number >= start:
                return True
        return False

    def _gpu(self, handle: Any) -> dict[str, Any]:
        if not isinstance(handle, FakeHandle) or handle.index not in self._gpus:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return self._gpus[handle.index]

    def _device(self, function: str, handle: Any, *key: Any) -> tuple[dict[str, Any], int]:
        gpu = self._gpu(handle)
        seen = self._enter(function, (handle.index,), (handle.index, *key))
        return gpu, seen

    @staticmethod
    def _value(gpu: dict[str, Any], key: str, value: Any) -> Any:
        """The recorded value, or the error the recording says this reading gave."""
        state = (gpu.get("unavailable") or {}).get(key)
        if state is not None:
            raise NVMLError(CODE_BY_STATE.get(state, NVML_ERROR_UNKNOWN))
        if value is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return value

    @staticmethod
    def _start_end(seen: int, start: Any, end: Any) -> Any:
        """First read: the start of the window; later reads: its end (or start if unrecorded)."""
        return start if seen == 0 or end is None else end

    def _sample(self, gpu: dict[str, Any], seen: int, name: str) -> Any:
        samples = gpu.get("samples") or [{}]
        return samples[min(seen, len(samples) - 1)].get(name)

    @staticmethod
    def _io_sample(gpu: dict[str, Any], seen: int, name: str) -> dict[str, Any] | None:
        """The `seen`-th of the samples that hold `name` (read once a second, not in each)."""
        holding = [s for s in gpu.get("samples") or [] if s.get(name) is not None]
        return holding[min(seen, len(holding) - 1)] if holding else None

    # ---- system ------------------------------------------------------------------------

    def nvmlInit(self) -> None:
        self._enter("nvmlInit")
        if self._faults.init_error is not None:
            raise NVMLError(self._faults.init_error, self._faults.init_words)
        with self._lock:
            self.initialised = True
            self.init_count += 1

    def nvmlShutdown(self) -> None:
        self._enter("nvmlShutdown")
        with self._lock:
            self.initialised = False
            self.shutdown_count += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._enter("nvmlSystemGetDriverVersion")
        return str(self._top("driver_version"))

    def nvmlSystemGetNVMLVersion(self) -> str:
        self._enter("nvmlSystemGetNVMLVersion")
        return str(self._top("nvml_version"))

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        self._enter("nvmlSystemGetCudaDriverVersion")
        return int(self._top("cuda_driver_version"))

    def _top(self, key: str) -> Any:
        value = self.recording.get(key)
        if value is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return value

    def nvmlDeviceGetCount(self) -> int:
        self._enter("nvmlDeviceGetCount")
        return int(self.recording.get("device_count") or len(self._gpus))

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeHandle:
        if index not in self._gpus:
            self._enter("nvmlDeviceGetHandleByIndex")
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        self._enter("nvmlDeviceGetHandleByIndex", (index,), (index,))
        lost = self._gpus[index].get("lost")
        if isinstance(lost, dict) and "samples" not in self._gpus[index]:
            raise NVMLError(CODE_BY_STATE.get(str(lost.get("state")), NVML_ERROR_GPU_IS_LOST))
        return FakeHandle(index)

    # ---- identity ----------------------------------------------------------------------

    def nvmlDeviceGetName(self, handle: Any) -> str:
        gpu, _ = self._device("nvmlDeviceGetName", handle)
        return str(self._value(gpu, "name", gpu.get("name")))

    def nvmlDeviceGetUUID(self, handle: Any) -> str:
        gpu, _ = self._device("nvmlDeviceGetUUID", handle)
        return str(self._value(gpu, "uuid", gpu.get("uuid")))

    def nvmlDeviceGetPciInfo(self, handle: Any) -> SimpleNamespace:
        gpu, _ = self._device("nvmlDeviceGetPciInfo", handle)
        bus_id = self._value(gpu, "pci", nvml_bus_id(gpu.get("pci_bus_id")))
        device_id = gpu.get("pci_device_id")
        return SimpleNamespace(
            busId=bus_id,
            busIdLegacy=bus_id[4:],
            pciDeviceId=int(device_id, 16) if device_id else 0,
        )

    def nvmlDeviceGetSerial(self, handle: Any) -> str:
        gpu, _ = self._device("nvmlDeviceGetSerial", handle)
        return str(self._value(gpu, "serial", gpu.get("serial")))

    def nvmlDeviceGetVbiosVersion(self, handle: Any) -> str:
        gpu, _ = self._device("nvmlDeviceGetVbiosVersion", handle)
        return str(self._value(gpu, "vbios", gpu.get("vbios")))

    def nvmlDeviceGetInforomImageVersion(self, handle: Any) -> str:
        gpu, _ = self._device("nvmlDeviceGetInforomImageVersion", handle)
        return str(self._value(gpu, "inforom_image", gpu.get("inforom_image")))

    def nvmlDeviceGetPersistenceMode(self, handle: Any) -> int:
        gpu, _ = self._device("nvmlDeviceGetPersistenceMode", handle)
        return int(bool(self._value(gpu, "persistence_mode", gpu.get("persistence_mode"))))

    # ---- PCIe --------------------------------------------------------------------------

    def _pcie(self, function: str, handle: Any, key: str, field_name: str) -> int:
        gpu, _ = self._device(function, handle)
        return int(self._value(gpu, key, (gpu.get("pcie") or {}).get(field_name)))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any) -> int:
        return self._pcie(
            "nvmlDeviceGetCurrPcieLinkGeneration", handle, "pcie.gen_current", "gen_current"
        )

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any) -> int:
        return self._pcie("nvmlDeviceGetMaxPcieLinkGeneration", handle, "pcie.gen_max", "gen_max")

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle: Any) -> int:
        return self._pcie(
            "nvmlDeviceGetGpuMaxPcieLinkGeneration", handle, "pcie.gen_device_max", "gen_device_max"
        )

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any) -> int:
        return self._pcie(
            "nvmlDeviceGetCurrPcieLinkWidth", handle, "pcie.width_current", "width_current"
        )

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any) -> int:
        return self._pcie("nvmlDeviceGetMaxPcieLinkWidth", handle, "pcie.width_max", "width_max")

    def nvmlDeviceGetPcieReplayCounter(self, handle: Any) -> int:
        gpu, seen = self._device("nvmlDeviceGetPcieReplayCounter", handle)
        pcie = gpu.get("pcie") or {}
        value = self._start_end(
            seen, pcie.get("replay_counter_start"), pcie.get("replay_counter_end")
        )
        return int(self._value(gpu, "pcie.replay", value))

    def nvmlDeviceGetPcieThroughput(self, handle: Any, counter: int) -> int:
        gpu, seen = self._device("nvmlDeviceGetPcieThroughput", handle, counter)
        name = _PCIE_COUNTERS[counter]
        sample = self._io_sample(gpu, seen, f"pcie_{name}_kbps") or {}
        return int(self._value(gpu, f"pcie.{name}", sample.get(f"pcie_{name}_kbps")))

    # ---- power, thermal, clocks --------------------------------------------------------

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> int:
        gpu, _ = self._device("nvmlDeviceGetEnforcedPowerLimit", handle)
        watts = self._value(gpu, "power.limit", (gpu.get("power") or {}).get("enforced_limit_w"))
        return round(float(watts) * 1000)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: Any) -> int:
        gpu, _ = self._device("nvmlDeviceGetPowerManagementDefaultLimit", handle)
        watts = self._value(
            gpu, "power.default_limit", (gpu.get("power") or {}).get("default_limit_w")
        )
        return round(float(watts) * 1000)

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> int:
        gpu, seen = self._device("nvmlDeviceGetPowerUsage", handle)
        watts = self._value(gpu, "power.draw", self._sample(gpu, seen, "power_w"))
        return round(float(watts) * 1000)

    def nvmlDeviceGetTemperatureThreshold(self, handle: Any, threshold: int) -> int:
        gpu, _ = self._device("nvmlDeviceGetTemperatureThreshold", handle, threshold)
        name = _THRESHOLDS[threshold]
        return int(
            self._value(gpu, f"temperature.{name}", (gpu.get("temperature") or {}).get(name))
        )

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int:
        gpu, seen = self._device("nvmlDeviceGetTemperature", handle, sensor)
        if sensor != 0:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return int(self._value(gpu, "temperature.gpu", self._sample(gpu, seen, "temp_c")))

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, clock: int) -> int:
        gpu, _ = self._device("nvmlDeviceGetMaxClockInfo", handle, clock)
        name = _CLOCKS[clock]
        return int(
            self._value(gpu, f"clocks_max.{name}", (gpu.get("clocks_max_mhz") or {}).get(name))
        )

    def nvmlDeviceGetClockInfo(self, handle: Any, clock: int) -> int:
        gpu, seen = self._device("nvmlDeviceGetClockInfo", handle, clock)
        name = _CLOCKS[clock]
        return int(self._value(gpu, f"clocks.{name}", self._sample(gpu, seen, f"{name}_clock_mhz")))

    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> SimpleNamespace:
        gpu, seen = self._device("nvmlDeviceGetUtilizationRates", handle)
        busy = self._sample(gpu, seen, "util_gpu")
        memory = self._sample(gpu, seen, "util_mem")
        self._value(gpu, "utilization", busy if memory is not None else None)
        return SimpleNamespace(gpu=busy, memory=memory)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int:
        gpu, seen = self._device("nvmlDeviceGetCurrentClocksEventReasons", handle)
        return int(
            self._value(gpu, "clock_event_reasons", self._sample(gpu, seen, "clock_event_reasons"))
        )

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: Any) -> int:
        gpu, seen = self._device("nvmlDeviceGetCurrentClocksThrottleReasons", handle)
        return int(
            self._value(gpu, "clock_event_reasons", self._sample(gpu, seen, "clock_event_reasons"))
        )

    def nvmlDeviceGetViolationStatus(self, handle: Any, policy: int) -> SimpleNamespace:
        gpu, seen = self._device("nvmlDeviceGetViolationStatus", handle, policy)
        name = _VIOLATIONS[policy]
        start = (gpu.get("violations_ns_start") or {}).get(name)
        end = (gpu.get("violations_ns_end") or {}).get(name)
        value = self._value(gpu, f"violations.{name}", self._start_end(seen, start, end))
        return SimpleNamespace(referenceTime=0, violationTime=int(value))

    def nvmlDeviceGetFieldValues(
        self, handle: Any, field_ids: list[int | tuple[int, int]]
    ) -> list[SimpleNamespace]:
        gpu, seen = self._device("nvmlDeviceGetFieldValues", handle, tuple(field_ids))
        out = []
        for asked in field_ids:
            field_id, scope = asked if isinstance(asked, tuple) else (asked, 0)
            value: Any = None
            code = NVML_ERROR_NOT_SUPPORTED
            kind, member = VALUE_TYPE_UNSIGNED_INT, "uiVal"
            if field_id in FI_NVLINK_THROUGHPUT:
                value, code = self._nvlink_throughput(
                    gpu, seen, FI_NVLINK_THROUGHPUT[field_id], scope
                )
                kind, member = VALUE_TYPE_UNSIGNED_LONG_LONG, "ullVal"
            elif field_id == FI_RECOVERY_ACTION:
                self._value(gpu, "recovery_action", 0)  # a recorded failure raises
                value = gpu.get("recovery_action")
            elif field_id == FI_MEMORY_TEMP:
                self._value(gpu, "temperature.memory", 0)
                value = self._sample(gpu, seen, "mem_temp_c")
                kind, member = VALUE_TYPE_SIGNED_LONG_LONG, "sllVal"
            union = SimpleNamespace(dVal=0.0, uiVal=0, ulVal=0, ullVal=0, sllVal=0, siVal=0)
            if value is not None:
                setattr(union, member, value)
            out.append(
                SimpleNamespace(
                    fieldId=field_id,
                    scopeId=scope,
                    nvmlReturn=NVML_SUCCESS if value is not None else code,
                    valueType=kind,
                    value=union,
                )
            )
        return out

    @staticmethod
    def _nvlink_throughput(
        gpu: dict[str, Any], seen: int, direction: str, scope: int
    ) -> tuple[Any, int]:
        """(KiB, return code): the recorded all-links count; where the recording summed the
        links itself (the all-links scope refused), link 0 carries the sum, others 0."""
        state = (gpu.get("unavailable") or {}).get("nvlink_throughput.counters")
        if state is not None:
            return None, CODE_BY_STATE.get(state, NVML_ERROR_UNKNOWN)
        start = gpu.get("nvlink_throughput_kib_start") or {}
        end = gpu.get("nvlink_throughput_kib_end") or {}
        recorded = FakePynvml._start_end(seen, start, end or None) or {}
        summed = "links_summed" in recorded
        if (scope == SCOPE_ALL_LINKS) == summed:
            return None, NVML_ERROR_NOT_SUPPORTED
        value = recorded.get(direction)
        if summed and scope != 0:
            value = 0 if value is not None else None
        return value, NVML_ERROR_NOT_SUPPORTED

    # ---- memory, energy ----------------------------------------------------------------

    def nvmlDeviceGetMemoryInfo(self, handle: Any, version: int | None = None) -> SimpleNamespace:
        gpu, seen = self._device("nvmlDeviceGetMemoryInfo", handle, version)
        sample = self._io_sample(gpu, seen, "mem_total_bytes")
        self._value(gpu, "memory", sample)
        assert sample is not None
        reserved = sample.get("mem_reserved_bytes")
        if version is not None and (version != MEMORY_V2 or reserved is None):
            raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)  # recorded from v1
        total, used = int(sample["mem_total_bytes"]), int(sample["mem_used_bytes"])
        if version is None:
            return SimpleNamespace(total=total, free=total - used, used=used)
        return SimpleNamespace(
            version=version,
            total=total,
            reserved=int(reserved),
            free=total - used - int(reserved),
            used=used,
        )

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any) -> int:
        gpu, seen = self._device("nvmlDeviceGetTotalEnergyConsumption", handle)
        value = self._start_end(seen, gpu.get("energy_mj_start"), gpu.get("energy_mj_end"))
        return int(self._value(gpu, "energy", value))

    # ---- memory errors -----------------------------------------------------------------

    def nvmlDeviceGetEccMode(self, handle: Any) -> list[int]:
        gpu, _ = self._device("nvmlDeviceGetEccMode", handle)
        enabled = self._value(gpu, "ecc.mode", (gpu.get("ecc") or {}).get("mode_enabled"))
        return [int(bool(enabled)), int(bool(enabled))]

    def nvmlDeviceGetTotalEccErrors(self, handle: Any, kind: int, counter: int) -> int:
        gpu, _ = self._device("nvmlDeviceGetTotalEccErrors", handle, kind, counter)
        scope, name = _ECC_COUNTERS[counter], _ECC_KINDS[kind]
        value = ((gpu.get("ecc") or {}).get(scope) or {}).get(name)
        return int(self._value(gpu, f"ecc.{scope}.{name}", value))

    def nvmlDeviceGetRemappedRows(self, handle: Any) -> tuple[int, int, int, int]:
        gpu, _ = self._device("nvmlDeviceGetRemappedRows", handle)
        remap = self._value(gpu, "remap", gpu.get("remap"))
        return (
            int(remap["corrected"]),
            int(remap["uncorrected"]),
            int(bool(remap["pending"])),
            int(bool(remap["failure"])),
        )

    def nvmlDeviceGetRowRemapperHistogram(self, handle: Any) -> SimpleNamespace:
        gpu, _ = self._device("nvmlDeviceGetRowRemapperHistogram", handle)
        histogram = self._value(gpu, "remap.histogram", (gpu.get("remap") or {}).get("histogram"))
        return SimpleNamespace(**histogram)

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: Any) -> int:
        gpu, _ = self._device("nvmlDeviceGetRetiredPagesPendingStatus", handle)
        retired = gpu.get("retired_pages")
        pending = self._value(
            gpu, "retired_pages.pending", None if retired is None else retired["pending"]
        )
        return int(bool(pending))

    def nvmlDeviceGetRetiredPages(self, handle: Any, cause: int) -> list[int]:
        gpu, _ = self._device("nvmlDeviceGetRetiredPages", handle, cause)
        name = _RETIRED[cause]
        count = self._value(
            gpu, f"retired_pages.{name}", (gpu.get("retired_pages") or {}).get(name)
        )
        return [0x1000 * (n + 1) for n in range(int(count))]

    # ---- NVLink ------------------------------------------------------------------------

    def _link(self, gpu: dict[str, Any], link: int) -> dict[str, Any]:
        links = gpu.get("nvlink") or []
        if link == 0 and "nvlink" in (gpu.get("unavailable") or {}):
            self._value(gpu, "nvlink", None)
        if link >= len(links):
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        entry: dict[str, Any] = links[link]
        return entry

    def nvmlDeviceGetNvLinkState(self, handle: Any, link: int) -> int:
        gpu, _ = self._device("nvmlDeviceGetNvLinkState", handle, link)
        active = self._link(gpu, link).get("active")
        if active is None:
            raise NVMLError(NVML_ERROR_UNKNOWN)
        return int(bool(active))

    def nvmlDeviceGetNvLinkRemotePciInfo(self, handle: Any, link: int) -> SimpleNamespace:
        gpu, _ = self._device("nvmlDeviceGetNvLinkRemotePciInfo", handle, link)
        remote = self._value(
            gpu, f"nvlink.{link}.remote", self._link(gpu, link).get("remote_pci_bus_id")
        )
        return SimpleNamespace(busId=nvml_bus_id(remote))

    def nvmlDeviceGetNvLinkVersion(self, handle: Any, link: int) -> int:
        gpu, _ = self._device("nvmlDeviceGetNvLinkVersion", handle, link)
        return int(self._value(gpu, f"nvlink.{link}.version", self._link(gpu, link).get("version")))

    def nvmlDeviceGetNvLinkErrorCounter(self, handle: Any, link: int, counter: int) -> int:
        gpu, seen = self._device("nvmlDeviceGetNvLinkErrorCounter", handle, link, counter)
        entry = self._link(gpu, link)
        name = _NVLINK_ERRORS[counter]
        start = (entry.get("errors") or {}).get(name)
        end = (entry.get("errors_end") or {}).get(name)
        return int(
            self._value(gpu, f"nvlink.{link}.errors.{name}", self._start_end(seen, start, end))
        )

    # ---- topology ----------------------------------------------------------------------

    def _pair(self, function: str, first: Any, second: Any) -> dict[str, Any]:
        a, b = self._gpu(first)["index"], self._gpu(second)["index"]
        self._enter(function, (a, b), (a, b))
        for pair in self.recording.get("pairs") or []:
            if {pair.get("a"), pair.get("b")} == {a, b}:
                found: dict[str, Any] = pair
                return found
        raise NVMLError(NVML_ERROR_NOT_SUPPORTED)

    def nvmlDeviceGetTopologyCommonAncestor(self, first: Any, second: Any) -> int:
        level = self._pair("nvmlDeviceGetTopologyCommonAncestor", first, second).get(
            "common_ancestor"
        )
        if level not in _TOPOLOGY:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return _TOPOLOGY[level]

    def nvmlDeviceGetP2PStatus(self, first: Any, second: Any, index: int) -> int:
        p2p = self._pair("nvmlDeviceGetP2PStatus", first, second).get("p2p_nvlink")
        if p2p is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return P2P_STATUS_OK if p2p else P2P_STATUS_NOT_SUPPORTED

    # ---- GPM (Hopper+) -----------------------------------------------------------------

    def nvmlGpmQueryDeviceSupport(self, handle: Any) -> SimpleNamespace:
        gpu, _ = self._device("nvmlGpmQueryDeviceSupport", handle)
        if not self._gpm_supported:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return SimpleNamespace(version=1, isSupportedDevice=int(bool(gpu.get("gpm"))))

    def nvmlGpmSampleAlloc(self) -> FakeGpmSample:
        self._enter("nvmlGpmSampleAlloc")
        return FakeGpmSample()

    def nvmlGpmSampleFree(self, sample: FakeGpmSample) -> None:
        self._enter("nvmlGpmSampleFree")
        sample.freed = True

    def nvmlGpmSampleGet(self, handle: Any, sample: FakeGpmSample) -> FakeGpmSample:
        self._device("nvmlGpmSampleGet", handle)
        sample.gpu = handle.index
        sample.taken_at = time.monotonic()
        return sample

    def nvmlGpmMetricsGet(self, request: _GpmMetricsGet) -> _GpmMetricsGet:
        first, second = request.sample1, request.sample2
        if not isinstance(first, FakeGpmSample) or not isinstance(second, FakeGpmSample):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        if first.gpu is None or first.gpu != second.gpu or first.freed or second.freed:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        gpu = self._gpus[first.gpu]
        seen = self._enter("nvmlGpmMetricsGet", (first.gpu,), (first.gpu,))
        recorded = gpu.get("gpm") or [{}]
        row = recorded[min(seen, len(recorded) - 1)]
        unavailable = gpu.get("unavailable") or {}
        for slot in range(request.numMetrics):
            metric = request.metrics[slot]
            value = row.get(_GPM_METRICS.get(metric.metricId, ""))
            state = unavailable.get(_GPM_KEYS.get(metric.metricId, ""))
            failed = CODE_BY_STATE.get(state, NVML_ERROR_UNKNOWN) if state else None
            metric.nvmlReturn = (
                NVML_SUCCESS if value is not None else failed or NVML_ERROR_NOT_SUPPORTED
            )
            metric.value = float(value) if value is not None else 0.0
        return request


def _thread_name() -> str:
    return threading.current_thread().name


# The per-GPU fields of a snapshot that do not depend on timing.
INVENTORY_KEYS = (
    "index",
    "name",
    "uuid",
    "pci_bus_id",
    "pci_device_id",
    "serial",
    "vbios",
    "inforom_image",
    "persistence_mode",
    "pcie",
    "power",
    "temperature",
    "clocks_max_mhz",
    "ecc",
    "remap",
    "retired_pages",
    "nvlink",
    "violations_ns_start",
    "violations_ns_end",
    "recovery_action",
    "unavailable",
)
