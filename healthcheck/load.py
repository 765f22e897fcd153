"""The optional `--load` probe: keep every GPU busy for the sampling window.

An idle GPU cannot show whether it reaches its power cap, holds its clocks or trains its
PCIe link to full speed. With `--load` (never otherwise), each GPU runs a compute kernel for
the window: PyTorch bf16 matrix products when PyTorch with CUDA is installed (the load that
reaches the power cap, as inference does), else an FMA loop in PTX launched through the CUDA
driver API with ctypes (no extra dependency). Each GPU's loop stops at the deadline or when
the run is interrupted; kernels are short (tens of ms), so stopping is prompt.
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

_PTX = rb"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry burn(.param .u64 out, .param .u32 iters)
{
  .reg .f32 a, b, c, d;
  .reg .u32 i, n, tid;
  .reg .u64 ptr, off;
  .reg .pred p;
  ld.param.u64 ptr, [out];
  ld.param.u32 n, [iters];
  mov.u32 tid, %tid.x;
  cvt.rn.f32.u32 a, tid;
  mov.f32 b, 0f3F7FFFF0;
  mov.f32 c, 0f3C000000;
  mov.f32 d, 0f3D000000;
  mov.u32 i, 0;
LOOP:
  fma.rn.f32 a, a, b, c;
  fma.rn.f32 d, d, b, c;
  fma.rn.f32 a, a, b, d;
  fma.rn.f32 d, d, b, a;
  fma.rn.f32 a, a, b, c;
  fma.rn.f32 d, d, b, c;
  fma.rn.f32 a, a, b, d;
  fma.rn.f32 d, d, b, a;
  add.u32 i, i, 1;
  setp.lt.u32 p, i, n;
  @p bra LOOP;
  add.f32 a, a, d;
  mul.wide.u32 off, tid, 4;
  add.u64 ptr, ptr, off;
  st.global.f32 [ptr], a;
  ret;
}
"""
_ITERATIONS = 20000
_THREADS = 256
_BLOCKS_PER_DEVICE = 132 * 16


@dataclass
class LoadHandle:
    stop: threading.Event = field(default_factory=threading.Event)
    threads: list[threading.Thread] = field(default_factory=list)
    engine: str = "none"
    errors: list[str] = field(default_factory=list)
    started: threading.Event = field(default_factory=threading.Event)

    def summary(self) -> dict[str, object]:
        return {"engine": self.engine, "gpus": len(self.threads), "errors": list(self.errors)}

    def stop_now(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=2.0)


def start_load(duration_s: float, warmup_s: float = 1.5) -> LoadHandle:
    """Start loading every GPU for `duration_s`; returns once the load is running (or failed)."""
    handle = LoadHandle()
    worker = _torch_worker() or _ptx_worker(handle)
    if worker is None:
        return handle
    handle.engine, run = worker
    deadline = time.monotonic() + duration_s
    for ordinal in range(_device_count(handle)):
        thread = threading.Thread(
            target=_guard,
            args=(run, ordinal, handle, deadline),
            daemon=True,
            name=f"load-{ordinal}",
        )
        handle.threads.append(thread)
        thread.start()
    handle.started.wait(timeout=warmup_s + 5.0)
    time.sleep(warmup_s)  # let power and clocks settle before sampling starts
    return handle


def _guard(
    run: Callable[[int, LoadHandle, float], None], ordinal: int, handle: LoadHandle, deadline: float
) -> None:
    try:
        run(ordinal, handle, deadline)
    except Exception as exc:
        handle.errors.append(f"GPU {ordinal}: {exc}")
        handle.started.set()


def _device_count(handle: LoadHandle) -> int:
    if handle.engine == "torch":
        import torch

        return int(torch.cuda.device_count())
    lib = _libcuda()
    count = ctypes.c_int(0)
    _check(lib.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
    return count.value


def _torch_worker() -> tuple[str, Callable[[int, LoadHandle, float], None]] | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None

    def run(ordinal: int, handle: LoadHandle, deadline: float) -> None:
        device = torch.device("cuda", ordinal)
        a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
        handle.started.set()
        while not handle.stop.is_set() and time.monotonic() < deadline:
            for _ in range(8):
                a @ b
            torch.cuda.synchronize(device)

    return "torch", run


def _ptx_worker(handle: LoadHandle) -> tuple[str, Callable[[int, LoadHandle, float], None]] | None:
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    try:
        lib = _libcuda()
        _check(lib.cuInit(0), "cuInit")
    except (OSError, RuntimeError) as exc:
        handle.errors.append(f"CUDA driver API unavailable: {exc}")
        return None

    def run(ordinal: int, handle: LoadHandle, deadline: float) -> None:
        _ptx_loop(lib, ordinal, handle, deadline)

    return "ptx", run


def _ptx_loop(lib: ctypes.CDLL, ordinal: int, handle: LoadHandle, deadline: float) -> None:
    device = ctypes.c_int()
    context = ctypes.c_void_p()
    module = ctypes.c_void_p()
    function = ctypes.c_void_p()
    buffer = ctypes.c_uint64()
    _check(lib.cuDeviceGet(ctypes.byref(device), ordinal), "cuDeviceGet")
    _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), device), "cuDevicePrimaryCtxRetain")
    try:
        _check(lib.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        _check(
            lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(_PTX)), "cuModuleLoadData"
        )
        _check(
            lib.cuModuleGetFunction(ctypes.byref(function), module, b"burn"), "cuModuleGetFunction"
        )
        _check(lib.cuMemAlloc_v2(ctypes.byref(buffer), _THREADS * 4), "cuMemAlloc")
        iterations = ctypes.c_uint32(_ITERATIONS)
        params = (ctypes.c_void_p * 2)(
            ctypes.cast(ctypes.byref(buffer), ctypes.c_void_p),
            ctypes.cast(ctypes.byref(iterations), ctypes.c_void_p),
        )
        handle.started.set()
        while not handle.stop.is_set() and time.monotonic() < deadline:
            _check(
                lib.cuLaunchKernel(
                    function, _BLOCKS_PER_DEVICE, 1, 1, _THREADS, 1, 1, 0, None, params, None
                ),
                "cuLaunchKernel",
            )
            _check(lib.cuCtxSynchronize(), "cuCtxSynchronize")
        lib.cuMemFree_v2(buffer)
    finally:
        lib.cuDevicePrimaryCtxRelease_v2(device)


def _libcuda() -> ctypes.CDLL:
    return ctypes.CDLL("libcuda.so.1")


def _check(code: int, call: str) -> None:
    if code != 0:
        raise RuntimeError(f"{call} failed with CUresult {code}")
