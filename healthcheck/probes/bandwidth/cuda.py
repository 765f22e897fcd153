"""The CUDA driver API through ctypes: the calls the bandwidth probe makes, typed.

No CUDA toolkit and no PyTorch: `libcuda.so.1` comes with the NVIDIA driver. Every call's
`CUresult` is checked; a failure raises `CudaError` naming the call and the driver's error
name (`cuGetErrorName`). Cleanup calls (`release`) never raise: they run on error paths.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Any

# CUDA driver API constants (cuda.h).
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_MEMHOSTALLOC_PORTABLE = 0x01
CU_STREAM_NON_BLOCKING = 0x1
CU_EVENT_DEFAULT = 0x0
CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704
CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)
_INT_P = ctypes.POINTER(ctypes.c_int)
_U64_P = ctypes.POINTER(ctypes.c_uint64)
_U64 = ctypes.c_uint64
_SIZE = ctypes.c_size_t
_UINT = ctypes.c_uint
_INT = ctypes.c_int

# name -> argtypes; every function returns CUresult (int).
_SIGNATURES: dict[str, Sequence[object]] = {
    "cuInit": (_UINT,),
    "cuDriverGetVersion": (_INT_P,),
    "cuDeviceGetCount": (_INT_P,),
    "cuDeviceGet": (_INT_P, _INT),
    "cuDeviceGetName": (ctypes.c_char_p, _INT, _INT),
    "cuDeviceGetPCIBusId": (ctypes.c_char_p, _INT, _INT),
    "cuDeviceGetUuid": (ctypes.c_char_p, _INT),
    "cuDeviceGetAttribute": (_INT_P, _INT, _INT),
    "cuDeviceCanAccessPeer": (_INT_P, _INT, _INT),
    "cuDevicePrimaryCtxRetain": (_PP, _INT),
    "cuDevicePrimaryCtxRelease_v2": (_INT,),
    "cuCtxSetCurrent": (_P,),
    "cuCtxEnablePeerAccess": (_P, _UINT),
    "cuCtxDisablePeerAccess": (_P,),
    "cuStreamCreate": (_PP, _UINT),
    "cuStreamDestroy_v2": (_P,),
    "cuStreamSynchronize": (_P,),
    "cuEventCreate": (_PP, _UINT),
    "cuEventDestroy_v2": (_P,),
    "cuEventRecord": (_P, _P),
    "cuEventSynchronize": (_P,),
    "cuEventElapsedTime": (ctypes.POINTER(ctypes.c_float), _P, _P),
    "cuMemAlloc_v2": (_U64_P, _SIZE),
    "cuMemFree_v2": (_U64,),
    "cuMemHostAlloc": (_PP, _SIZE, _UINT),
    "cuMemFreeHost": (_P,),
    "cuMemcpyHtoDAsync_v2": (_U64, _P, _SIZE, _P),
    "cuMemcpyDtoHAsync_v2": (_P, _U64, _SIZE, _P),
    "cuMemcpyDtoDAsync_v2": (_U64, _U64, _SIZE, _P),
    "cuMemcpyDtoH_v2": (_P, _U64, _SIZE),
    "cuMemsetD32Async": (_U64, _UINT, _SIZE, _P),
    "cuModuleLoadData": (_PP, ctypes.c_char_p),
    "cuModuleGetFunction": (_PP, _P, ctypes.c_char_p),
    "cuModuleUnload": (_P,),
    "cuLaunchKernel": (_P, _UINT, _UINT, _UINT, _UINT, _UINT, _UINT, _UINT, _P, _PP, _PP),
    "cuFuncSetAttribute": (_P, _INT, _INT),
    "cuMemGetInfo_v2": (ctypes.POINTER(_SIZE), ctypes.POINTER(_SIZE)),
    "cuMemcpyHtoD_v2": (_U64, _P, _SIZE),
    "cuCtxSynchronize": (),
}


# Symbols tried in order for a name (newer drivers add _v2 entry points, keep the old ones).
_ALTERNATES: dict[str, tuple[str, ...]] = {
    "cuDeviceGetUuid": ("cuDeviceGetUuid_v2", "cuDeviceGetUuid"),
    "cuEventElapsedTime": ("cuEventElapsedTime", "cuEventElapsedTime_v2"),
}


class CudaError(RuntimeError):
    def __init__(self, call: str, code: int, name: str) -> None:
        super().__init__(f"{call} failed: {name} ({code})")
        self.call = call
        self.code = code


class Driver:
    """One loaded `libcuda`; methods return Python values and raise `CudaError`."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self._lib = lib
        self._functions: dict[str, Any] = {}
        for name, argtypes in _SIGNATURES.items():
            function = _resolve(lib, name)
            function.argtypes = list(argtypes)
            function.restype = ctypes.c_int
            self._functions[name] = function

    @classmethod
    def load(cls) -> Driver:
        return cls(ctypes.CDLL("libcuda.so.1"))

    def call(self, name: str, *args: object) -> None:
        code = int(self._functions[name](*args))
        if code != 0:
            raise CudaError(name, code, self.error_name(code))

    def release(self, name: str, *args: object) -> int:
        """A cleanup call: its CUresult, never an exception."""
        try:
            return int(self._functions[name](*args))
        except (ctypes.ArgumentError, OSError):
            return -1

    def error_name(self, code: int) -> str:
        text = ctypes.c_char_p()
        get = self._lib.cuGetErrorName
        if get(ctypes.c_int(code), ctypes.byref(text)) != 0 or not text.value:
            return f"CUresult {code}"
        return text.value.decode("ascii", "replace")

    # --- queries -------------------------------------------------------------------------

    def init(self) -> None:
        self.call("cuInit", 0)

    def version(self) -> int:
        value = ctypes.c_int()
        self.call("cuDriverGetVersion", ctypes.byref(value))
        return value.value

    def count(self) -> int:
        value = ctypes.c_int()
        self.call("cuDeviceGetCount", ctypes.byref(value))
        return value.value

    def device(self, ordinal: int) -> int:
        value = ctypes.c_int()
        self.call("cuDeviceGet", ctypes.byref(value), ordinal)
        return value.value

    def name(self, device: int) -> str:
        buffer = ctypes.create_string_buffer(256)
        self.call("cuDeviceGetName", buffer, len(buffer), device)
        return buffer.value.decode("utf-8", "replace")

    def bus_id(self, device: int) -> str:
        buffer = ctypes.create_string_buffer(64)
        self.call("cuDeviceGetPCIBusId", buffer, len(buffer), device)
        return buffer.value.decode("ascii", "replace").lower()

    def uuid(self, device: int) -> str:
        """`GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`, as nvidia-smi -L prints it."""
        raw = ctypes.create_string_buffer(16)
        self.call("cuDeviceGetUuid", raw, device)
        return format_uuid(raw.raw[:16])

    def attribute(self, device: int, attribute: int) -> int:
        value = ctypes.c_int()
        self.call("cuDeviceGetAttribute", ctypes.byref(value), attribute, device)
        return value.value

    def can_access_peer(self, device: int, peer: int) -> bool:
        value = ctypes.c_int()
        self.call("cuDeviceCanAccessPeer", ctypes.byref(value), device, peer)
        return bool(value.value)

    # --- resources -----------------------------------------------------------------------

    def retain_context(self, device: int) -> int:
        context = ctypes.c_void_p()
        self.call("cuDevicePrimaryCtxRetain", ctypes.byref(context), device)
        return int(context.value or 0)

    def set_context(self, context: int) -> None:
        self.call("cuCtxSetCurrent", ctypes.c_void_p(context))

    def stream(self) -> int:
        handle = ctypes.c_void_p()
        self.call("cuStreamCreate", ctypes.byref(handle), CU_STREAM_NON_BLOCKING)
        return int(handle.value or 0)

    def event(self) -> int:
        handle = ctypes.c_void_p()
        self.call("cuEventCreate", ctypes.byref(handle), CU_EVENT_DEFAULT)
        return int(handle.value or 0)

    def alloc(self, nbytes: int) -> int:
        pointer = ctypes.c_uint64()
        self.call("cuMemAlloc_v2", ctypes.byref(pointer), nbytes)
        return pointer.value

    def host_alloc(self, nbytes: int) -> int:
        """Pinned (page-locked) host memory usable from every context."""
        pointer = ctypes.c_void_p()
        self.call("cuMemHostAlloc", ctypes.byref(pointer), nbytes, CU_MEMHOSTALLOC_PORTABLE)
        return int(pointer.value or 0)

    def load_module(self, image: bytes) -> int:
        module = ctypes.c_void_p()
        self.call("cuModuleLoadData", ctypes.byref(module), image)
        return int(module.value or 0)

    def function(self, module: int, name: bytes) -> int:
        handle = ctypes.c_void_p()
        self.call("cuModuleGetFunction", ctypes.byref(handle), ctypes.c_void_p(module), name)
        return int(handle.value or 0)

    # --- work ----------------------------------------------------------------------------

    def record(self, event: int, stream: int) -> None:
        self.call("cuEventRecord", ctypes.c_void_p(event), ctypes.c_void_p(stream))

    def elapsed_ms(self, start: int, stop: int) -> float:
        """Milliseconds between two recorded events, once `stop` has completed."""
        self.call("cuEventSynchronize", ctypes.c_void_p(stop))
        value = ctypes.c_float()
        self.call(
            "cuEventElapsedTime", ctypes.byref(value), ctypes.c_void_p(start), ctypes.c_void_p(stop)
        )
        return float(value.value)

    def synchronize(self, stream: int) -> None:
        self.call("cuStreamSynchronize", ctypes.c_void_p(stream))

    def host_to_device(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        self.call(
            "cuMemcpyHtoDAsync_v2", dst, ctypes.c_void_p(src), nbytes, ctypes.c_void_p(stream)
        )

    def device_to_host(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        self.call(
            "cuMemcpyDtoHAsync_v2", ctypes.c_void_p(dst), src, nbytes, ctypes.c_void_p(stream)
        )

    def device_to_device(self, dst: int, src: int, nbytes: int, stream: int) -> None:
        self.call("cuMemcpyDtoDAsync_v2", dst, src, nbytes, ctypes.c_void_p(stream))

    def fill32(self, dst: int, value: int, count: int, stream: int) -> None:
        self.call("cuMemsetD32Async", dst, value, count, ctypes.c_void_p(stream))

    def memory_info(self) -> tuple[int, int]:
        """(free, total) bytes of the current context's device."""
        free, total = _SIZE(), _SIZE()
        self.call("cuMemGetInfo_v2", ctypes.byref(free), ctypes.byref(total))
        return free.value, total.value

    def write(self, dst: int, data: bytes) -> None:
        """A small synchronous host-to-device write."""
        buffer = ctypes.create_string_buffer(data, len(data))
        self.call("cuMemcpyHtoD_v2", dst, ctypes.cast(buffer, ctypes.c_void_p), len(data))

    def context_synchronize(self) -> None:
        self.call("cuCtxSynchronize")

    def allow_shared(self, function: int, nbytes: int) -> None:
        """Let `function` take `nbytes` of dynamic shared memory (past the 48 KB default)."""
        self.call(
            "cuFuncSetAttribute",
            ctypes.c_void_p(function),
            CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            nbytes,
        )

    def read(self, src: int, nbytes: int) -> bytes:
        """A small synchronous device-to-host read (verification)."""
        buffer = ctypes.create_string_buffer(nbytes)
        self.call("cuMemcpyDtoH_v2", ctypes.cast(buffer, ctypes.c_void_p), src, nbytes)
        return buffer.raw

    def launch(
        self,
        function: int,
        grid: int,
        block: int,
        stream: int,
        args: Sequence[int],
        shared: int = 0,
    ) -> None:
        """Launch a kernel whose parameters are all 64-bit values."""
        values = [ctypes.c_uint64(a) for a in args]
        params = (ctypes.c_void_p * len(values))(
            *[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in values]
        )
        self.call(
            "cuLaunchKernel",
            ctypes.c_void_p(function),
            grid, 1, 1, block, 1, 1, shared,
            ctypes.c_void_p(stream),
            params,
            None,
        )  # fmt: skip

    def enable_peer(self, peer_context: int) -> None:
        """Let the current context reach `peer_context`'s memory (already enabled is fine)."""
        code = self.release("cuCtxEnablePeerAccess", ctypes.c_void_p(peer_context), 0)
        if code not in (0, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED):
            raise CudaError("cuCtxEnablePeerAccess", code, self.error_name(code))


def _resolve(lib: ctypes.CDLL, name: str) -> Any:
    for symbol in _ALTERNATES.get(name, (name,)):
        try:
            return getattr(lib, symbol)
        except AttributeError:
            continue
    raise OSError(f"libcuda.so.1 has no {name}: the NVIDIA driver is too old")


def format_uuid(raw: bytes) -> str:
    text = raw.hex()
    return f"GPU-{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:32]}"
