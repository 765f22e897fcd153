"""A GPU's frame-buffer memory through NVML: total, reserved and used, in bytes.

`nvmlDeviceGetMemoryInfo_v2` (drivers since R510) keeps the memory the driver reserves apart
from `used`; the first version counts it as used. The reader asks v2 where the binding has it
and falls back to v1 once v2 is refused (not supported, or an error such as a version
mismatch), remembering the choice for the GPU's later samples. A reading that fails both ways
is noted under `memory` with its state, never written as zero.
"""

from __future__ import annotations

from typing import Any

from .nvml_record import GpuRecorder

KEY = "memory"
# A v2 refusal after which v1 is worth asking; lost GPUs and timeouts are not retried.
_RETRY_STATES = frozenset({"not_supported", "error"})


class MemoryReader:
    """One GPU's memory readings, as sample fields (`mem_total_bytes`, `mem_used_bytes`,
    `mem_reserved_bytes` where v2 answered)."""

    def __init__(self, rec: GpuRecorder, handle: Any) -> None:
        self._rec = rec
        self._handle = handle
        self._v2: Any = getattr(rec.nvml.lib, "nvmlMemory_v2", None)

    def read(self) -> dict[str, Any]:
        nvml = self._rec.nvml
        if self._v2 is not None:
            got = nvml.read("nvmlDeviceGetMemoryInfo", self._handle, self._v2)
            if got.ok:
                return _fields(got.value, reserved=True)
            if got.state not in _RETRY_STATES:
                self._rec.keep(KEY, got)
                return {}
            self._v2 = None
        value = self._rec.read(KEY, "nvmlDeviceGetMemoryInfo", self._handle)
        return {} if value is None else _fields(value, reserved=False)


def _fields(info: Any, reserved: bool) -> dict[str, Any]:
    out = {
        "mem_total_bytes": _bytes(getattr(info, "total", None)),
        "mem_used_bytes": _bytes(getattr(info, "used", None)),
    }
    if reserved:
        out["mem_reserved_bytes"] = _bytes(getattr(info, "reserved", None))
    return out


def _bytes(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
