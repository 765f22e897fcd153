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
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from msgspec import Struct, field

from ..sources import child_python

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
_MODULE = "sitscheck.probes.load"
_ITERATIONS = 20000
_THREADS = 256
_BLOCKS_PER_DEVICE = 132 * 16


class _Workers(Struct):
    """Inside the load process: one thread per GPU."""

    stop: threading.Event = field(default_factory=threading.Event)
    engine: str = "none"
    errors: list[str] = field(default_factory=list)
    started: threading.Event = field(default_factory=threading.Event)


class LoadHandle(Struct):
    """The parent's view of the load process."""

    process: subprocess.Popen[str] | None
    engine: str
    errors: list[str]

    def summary(self) -> dict[str, object]:
        return {"engine": self.engine, "errors": list(self.errors)}

    def stop(self) -> None:
        """Kill the load process group; returns within a couple of seconds whatever happens."""
        if self.process is None or self.process.poll() is not None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sig)
            except (ProcessLookupError, PermissionError):
                return
            try:
                self.process.wait(timeout=1.0)
                return
            except subprocess.TimeoutExpired:
                continue


def start_load(duration_s: float, warmup_s: float = 1.5) -> LoadHandle:
    """Start a process that keeps every GPU busy for `duration_s`; return once it runs.

    A separate process (its own session; an isolated interpreter, `child_python`) keeps CUDA
    out of the checker: a crash or hang in the load cannot take the run with it, and stopping
    is a kill of its process group.
    """
    try:
        process = child_python.start(
            _MODULE,
            (f"{duration_s:.1f}",),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
    except OSError as exc:
        return LoadHandle(None, "none", [f"cannot start the load process: {exc}"])
    stdout = process.stdout
    ready = stdout is not None and bool(select.select([stdout], [], [], warmup_s + 20.0)[0])
    line = stdout.readline().strip() if ready and stdout is not None else ""
    status, _, detail = line.partition(" ")
    if status != "ready":
        handle = LoadHandle(process, "none", [line or "the load process did not start in time"])
        handle.stop()
        return handle
    engine, _, errors = detail.partition(" ")
    time.sleep(warmup_s)  # let power and clocks settle before sampling starts
    return LoadHandle(process, engine, [errors] if errors else [])


def main(argv: list[str]) -> int:
    """`python -m sitscheck.probes.load SECONDS`: load every GPU, print `ready ENGINE`, then run."""
    duration = float(argv[0]) if argv else 10.0
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    workers = _Workers()
    worker = _torch_worker() or _ptx_worker(workers)
    if worker is None:
        print("failed " + "; ".join(workers.errors or ["no CUDA load engine"]), flush=True)
        return 1
    workers.engine, run = worker
    deadline = time.monotonic() + duration
    threads = [
        threading.Thread(target=_guard, args=(run, n, workers, deadline), daemon=True)
        for n in range(_device_count(workers))
    ]
    for thread in threads:
        thread.start()
    workers.started.wait(timeout=20.0)
    print(f"ready {workers.engine} {'; '.join(workers.errors)}".rstrip(), flush=True)
    for thread in threads:
        thread.join(timeout=max(deadline - time.monotonic(), 0.0) + 1.0)
    os._exit(0)  # no CUDA/PyTorch teardown: the work is done and the process is disposable


def _guard(
    run: Callable[[int, _Workers, float], None], ordinal: int, workers: _Workers, deadline: float
) -> None:
    try:
        run(ordinal, workers, deadline)
    except Exception as exc:
        workers.errors.append(f"GPU {ordinal}: {exc}")
        workers.started.set()


def _device_count(workers: _Workers) -> int:
    if workers.engine == "torch":
        import torch

        return int(torch.cuda.device_count())
    lib = _libcuda()
    count = ctypes.c_int(0)
    _check(lib.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
    return count.value


def _torch_worker() -> tuple[str, Callable[[int, _Workers, float], None]] | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None

    def run(ordinal: int, handle: _Workers, deadline: float) -> None:
        device = torch.device("cuda", ordinal)
        a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
        handle.started.set()
        while not handle.stop.is_set() and time.monotonic() < deadline:
            for _ in range(8):
                a @ b
            torch.cuda.synchronize(device)

    return "torch", run


def _ptx_worker(handle: _Workers) -> tuple[str, Callable[[int, _Workers, float], None]] | None:
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    try:
        lib = _libcuda()
        _check(lib.cuInit(0), "cuInit")
    except (OSError, RuntimeError) as exc:
        handle.errors.append(f"CUDA driver API unavailable: {exc}")
        return None

    def run(ordinal: int, handle: _Workers, deadline: float) -> None:
        _ptx_loop(lib, ordinal, handle, deadline)

    return "ptx", run


def _ptx_loop(lib: ctypes.CDLL, ordinal: int, handle: _Workers, deadline: float) -> None:
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
