"""Measure what each GPU's links and memory deliver, through the CUDA driver API.

Per GPU, alone (the others idle): host→device and device→host copies from pinned host memory
(`cuMemHostAlloc`), and a device-local copy twice, by the copy engine (`cuMemcpyDtoDAsync`)
and by a copy kernel (PTX, 16-byte loads and stores); then every GPU's host→device copies at
once (GPUs behind one upstream port share its bandwidth); then a peer-to-peer write for every
ordered GPU pair `cuDeviceCanAccessPeer` allows (nvbandwidth's
device_to_device_memcpy_write_ce). Each figure is timed with CUDA events around the copies,
after a warm-up, and is the best of several samples; 1 GB/s is 10^9 bytes per second, as
nvbandwidth and DCGM count. The device-local figure is bytes copied per second (nvbandwidth's
device_local_copy); `hbm_gbs` counts the bytes read and written, comparable with a data
sheet's memory bandwidth.

Every resource is released on every path (an ExitStack per GPU); the plan's deadline is
checked between samples, and stopping (deadline or SIGTERM) keeps what was measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from functools import partial
from typing import Any

from msgspec import Struct, field

from . import FORMAT
from .cuda import CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CudaError, Driver

VERSION = 1
MIB = 1024 * 1024
_PATTERN = 0xBAADF00D
_THREADS = 512
_BLOCKS_PER_SM = 4

# dst[i] = src[i] over 16-byte elements, grid-stride loop.
COPY_PTX = rb"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry copy16(.param .u64 dst, .param .u64 src, .param .u64 count)
{
  .reg .pred %p<2>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [dst];
  ld.param.u64 %rd2, [src];
  ld.param.u64 %rd3, [count];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd4, %r3, %r2;
  cvt.u64.u32 %rd5, %r1;
  add.u64 %rd4, %rd4, %rd5;
  mul.wide.u32 %rd6, %r4, %r2;
  setp.ge.u64 %p1, %rd4, %rd3;
  @%p1 bra DONE;
LOOP:
  shl.b64 %rd7, %rd4, 4;
  add.u64 %rd8, %rd2, %rd7;
  ld.global.v4.b32 {%r5, %r6, %r7, %r8}, [%rd8];
  add.u64 %rd9, %rd1, %rd7;
  st.global.v4.b32 [%rd9], {%r5, %r6, %r7, %r8};
  add.u64 %rd4, %rd4, %rd6;
  setp.lt.u64 %p1, %rd4, %rd3;
  @%p1 bra LOOP;
DONE:
  ret;
}
"""


class Stop(Exception):
    """Measuring ends early (the deadline passed, or a signal came); what was measured stays."""


class Plan(Struct, frozen=True):
    """How much to measure (copy size, samples, repeats), and the deadline that stops it."""

    deadline: float  # time.monotonic() by which measuring stops
    nbytes: int = 256 * MIB
    samples: int = 5
    warmup: int = 1
    local_repeats: int = 8  # a device-local copy of 256 MiB takes ~0.1 ms: time several
    concurrent_rounds: int = 3
    concurrent_copies: int = 4

    def check(self, what: str) -> None:
        if time.monotonic() >= self.deadline:
            raise Stop(f"deadline passed before {what}")

    def summary(self) -> dict[str, int]:
        return {
            "bytes_per_copy": self.nbytes,
            "samples": self.samples,
            "warmup": self.warmup,
            "local_repeats": self.local_repeats,
            "concurrent_rounds": self.concurrent_rounds,
            "concurrent_copies": self.concurrent_copies,
        }


class Gpu(Struct):
    """One GPU's context, stream, timing events and buffers (two on the device, one pinned)."""

    ordinal: int
    device: int
    identity: dict[str, Any]
    context: int = 0
    stream: int = 0
    start: int = 0
    stop: int = 0
    dev_a: int = 0
    dev_b: int = 0
    host: int = 0
    copy_kernel: int = 0
    sms: int = 0
    setup_s: float = 0.0
    resources: ExitStack = field(default_factory=ExitStack)

    def close(self) -> None:
        self.resources.close()


def open_gpu(driver: Driver, ordinal: int, nbytes: int) -> Gpu:
    """Everything one GPU's measurements need; on failure, what was made is released."""
    began = time.monotonic()
    device = driver.device(ordinal)
    gpu = Gpu(
        ordinal,
        device,
        {
            "ordinal": ordinal,
            "name": driver.name(device),
            "pci_bus_id": driver.bus_id(device),
            "uuid": driver.uuid(device),
        },
    )
    stack = gpu.resources
    try:
        gpu.sms = driver.attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        gpu.context = driver.retain_context(device)
        stack.callback(driver.release, "cuDevicePrimaryCtxRelease_v2", device)
        driver.set_context(gpu.context)
        gpu.stream = driver.stream()
        stack.callback(_in_context, driver, gpu.context, "cuStreamDestroy_v2", gpu.stream)
        gpu.start = driver.event()
        stack.callback(_in_context, driver, gpu.context, "cuEventDestroy_v2", gpu.start)
        gpu.stop = driver.event()
        stack.callback(_in_context, driver, gpu.context, "cuEventDestroy_v2", gpu.stop)
        gpu.dev_a = driver.alloc(nbytes)
        stack.callback(_in_context, driver, gpu.context, "cuMemFree_v2", gpu.dev_a)
        gpu.dev_b = driver.alloc(nbytes)
        stack.callback(_in_context, driver, gpu.context, "cuMemFree_v2", gpu.dev_b)
        gpu.host = driver.host_alloc(nbytes)
        stack.callback(_in_context, driver, gpu.context, "cuMemFreeHost", gpu.host)
        module = driver.load_module(COPY_PTX)
        stack.callback(_in_context, driver, gpu.context, "cuModuleUnload", module)
        gpu.copy_kernel = driver.function(module, b"copy16")
        # Synchronize: the stream's work (and the frees behind it) is done before release.
        stack.callback(_in_context, driver, gpu.context, "cuStreamSynchronize", gpu.stream)
    except BaseException:
        stack.close()
        raise
    gpu.setup_s = round(time.monotonic() - began, 3)
    return gpu


def _in_context(driver: Driver, context: int, call: str, handle: int) -> None:
    import ctypes

    driver.release("cuCtxSetCurrent", ctypes.c_void_p(context))
    argument: object = (
        ctypes.c_uint64(handle) if call == "cuMemFree_v2" else ctypes.c_void_p(handle)
    )
    driver.release(call, argument)


def series(
    driver: Driver,
    gpu: Gpu,
    plan: Plan,
    copy: Callable[[], None],
    repeats: int = 1,
    what: str = "a copy",
) -> dict[str, Any]:
    """`copy` (moving `plan.nbytes`) timed `plan.samples` times after a warm-up: best GB/s."""
    driver.set_context(gpu.context)
    for _ in range(plan.warmup):
        copy()
    driver.synchronize(gpu.stream)
    samples: list[float] = []
    for _ in range(plan.samples):
        plan.check(what)
        driver.record(gpu.start, gpu.stream)
        for _ in range(repeats):
            copy()
        driver.record(gpu.stop, gpu.stream)
        samples.append(gbs(plan.nbytes * repeats, driver.elapsed_ms(gpu.start, gpu.stop)))
    return {"gbs": max(samples), "samples": samples}


def gbs(nbytes: int, elapsed_ms: float) -> float:
    if elapsed_ms <= 0:
        raise RuntimeError(f"CUDA events timed {nbytes} bytes at {elapsed_ms} ms")
    return round(nbytes / (elapsed_ms * 1e6), 2)


def alone(driver: Driver, gpu: Gpu, plan: Plan) -> dict[str, Any]:
    """One GPU by itself: PCIe both ways from pinned memory, then its memory (HBM)."""
    n = plan.nbytes
    entry: dict[str, Any] = {}
    entry["h2d"] = series(
        driver,
        gpu,
        plan,
        lambda: driver.host_to_device(gpu.dev_a, gpu.host, n, gpu.stream),
        what=f"GPU {gpu.ordinal} host→device",
    )
    entry["d2h"] = series(
        driver,
        gpu,
        plan,
        lambda: driver.device_to_host(gpu.host, gpu.dev_a, n, gpu.stream),
        what=f"GPU {gpu.ordinal} device→host",
    )
    driver.fill32(gpu.dev_a, _PATTERN, n // 4, gpu.stream)
    entry["local_ce"] = series(
        driver,
        gpu,
        plan,
        lambda: driver.device_to_device(gpu.dev_b, gpu.dev_a, n, gpu.stream),
        repeats=plan.local_repeats,
        what=f"GPU {gpu.ordinal} device-local copy",
    )
    driver.fill32(gpu.dev_b, 0, n // 4, gpu.stream)
    grid = max(gpu.sms, 1) * _BLOCKS_PER_SM
    entry["local_kernel"] = series(
        driver, gpu, plan,
        lambda: driver.launch(
            gpu.copy_kernel, grid, _THREADS, gpu.stream, (gpu.dev_b, gpu.dev_a, n // 16)
        ),
        repeats=plan.local_repeats, what=f"GPU {gpu.ordinal} copy kernel",
    )  # fmt: skip
    driver.synchronize(gpu.stream)
    entry["local_verified"] = _verified(driver, gpu.dev_b, n)
    best = max(entry["local_ce"]["gbs"], entry["local_kernel"]["gbs"])
    entry["local_copy_gbs"] = best
    entry["hbm_gbs"] = round(2 * best, 2)
    return entry


def _verified(driver: Driver, buffer: int, nbytes: int) -> bool:
    """The kernel's copy holds the source pattern at its start and its end."""
    expected = _PATTERN.to_bytes(4, "little") * 64
    return driver.read(buffer, 256) == expected and driver.read(buffer + nbytes - 256, 256) == (
        expected
    )


def concurrent_h2d(driver: Driver, gpus: list[Gpu], plan: Plan) -> dict[str, Any]:
    """Every GPU's host→device copies at once. Per GPU its own events' figure (DCGM's
    concurrent subtest counts so); `wall_gbs` is all the bytes over the host's wall time from
    the first enqueue to the last GPU done, which holds even where the copies did not overlap
    to the end. The round with the best `wall_gbs` is kept."""
    n, copies = plan.nbytes, plan.concurrent_copies
    rounds: list[dict[str, Any]] = []
    for number in range(plan.warmup + plan.concurrent_rounds):
        plan.check("concurrent host→device copies")
        began = time.perf_counter()
        for gpu in gpus:
            driver.set_context(gpu.context)
            driver.record(gpu.start, gpu.stream)
            for _ in range(copies):
                driver.host_to_device(gpu.dev_a, gpu.host, n, gpu.stream)
            driver.record(gpu.stop, gpu.stream)
        figures = {}
        for gpu in gpus:
            driver.set_context(gpu.context)
            figures[str(gpu.ordinal)] = gbs(n * copies, driver.elapsed_ms(gpu.start, gpu.stop))
        wall_ms = (time.perf_counter() - began) * 1000.0
        if number >= plan.warmup:
            rounds.append({"gbs": figures, "wall_gbs": gbs(n * copies * len(gpus), wall_ms)})
    best = max(rounds, key=lambda r: float(r["wall_gbs"]))
    return {
        "gbs": best["gbs"],
        "sum_gbs": round(sum(best["gbs"].values()), 2),
        "wall_gbs": best["wall_gbs"],
        "rounds": rounds,
    }


def peer_pairs(driver: Driver, gpus: list[Gpu], plan: Plan) -> tuple[list[Any], list[Any]]:
    """Peer writes (src's copy engine into dst's memory) for every pair that allows them."""
    import ctypes

    measured: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    for src in gpus:
        for dst in gpus:
            if src is dst:
                continue
            if not driver.can_access_peer(src.device, dst.device):
                refused.append({"src": src.ordinal, "dst": dst.ordinal, "reason": "no peer access"})
                continue
            driver.set_context(src.context)
            driver.enable_peer(dst.context)
            try:
                figure = series(
                    driver, src, plan,
                    partial(driver.device_to_device, dst.dev_b, src.dev_a, plan.nbytes, src.stream),
                    what=f"GPU {src.ordinal}→GPU {dst.ordinal} peer copy",
                )  # fmt: skip
            finally:
                driver.release("cuCtxSetCurrent", ctypes.c_void_p(src.context))
                driver.release("cuStreamSynchronize", ctypes.c_void_p(src.stream))
                driver.release("cuCtxDisablePeerAccess", ctypes.c_void_p(dst.context))
            measured.append({"src": src.ordinal, "dst": dst.ordinal, **figure})
    return measured, refused


def new_record(plan: Plan) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "plan": plan.summary(),
        "cuda_driver_version": None,
        "device_count": None,
        "gpus": [],
        "concurrent_h2d": None,
        "p2p": [],
        "p2p_refused": [],
        "phases_s": {},
        "errors": [],
        "stopped": None,
        "elapsed_s": None,
    }


def measure(driver: Driver, plan: Plan, record: dict[str, Any]) -> None:
    """Fill `record` as measuring goes; a `Stop` leaves what was done in it."""
    began = time.monotonic()
    driver.init()
    record["cuda_driver_version"] = driver.version()
    count = driver.count()
    record["device_count"] = count
    record["phases_s"]["init"] = round(time.monotonic() - began, 3)
    with ExitStack() as stack:
        gpus = _open_all(driver, count, plan, record, stack)
        _phase(record, "alone", lambda: _alone_all(driver, gpus, plan, record))
        if len(gpus) > 1:
            _phase(
                record, "concurrent",
                lambda: record.__setitem__("concurrent_h2d", concurrent_h2d(driver, gpus, plan)),
            )  # fmt: skip

            def p2p() -> None:
                record["p2p"], record["p2p_refused"] = peer_pairs(driver, gpus, plan)

            _phase(record, "p2p", p2p)
        began = time.monotonic()
    record["phases_s"]["release"] = round(time.monotonic() - began, 3)


def _open_all(
    driver: Driver, count: int, plan: Plan, record: dict[str, Any], stack: ExitStack
) -> list[Gpu]:
    """Open every GPU at once (context creation dominates start-up, and is per device)."""
    began = time.monotonic()
    plan.check("opening the GPUs")

    def one(ordinal: int) -> Gpu | str:
        try:
            return open_gpu(driver, ordinal, plan.nbytes)
        except (CudaError, OSError) as exc:
            return f"GPU {ordinal}: {exc}"

    gpus: list[Gpu] = []
    with ThreadPoolExecutor(max_workers=max(count, 1)) as pool:
        for outcome in pool.map(one, range(count)):
            if isinstance(outcome, Gpu):
                stack.callback(outcome.close)
                gpus.append(outcome)
            else:
                record["errors"].append(outcome)
    record["phases_s"]["setup"] = round(time.monotonic() - began, 3)
    return gpus


def _alone_all(driver: Driver, gpus: list[Gpu], plan: Plan, record: dict[str, Any]) -> None:
    for gpu in gpus:
        entry: dict[str, Any] = {**gpu.identity, "setup_s": gpu.setup_s}
        record["gpus"].append(entry)
        try:
            entry.update(alone(driver, gpu, plan))
        except CudaError as exc:
            entry["error"] = str(exc)
            record["errors"].append(f"GPU {gpu.ordinal}: {exc}")


def _phase(record: dict[str, Any], name: str, work: Callable[[], None]) -> None:
    began = time.monotonic()
    try:
        work()
    except CudaError as exc:
        record["errors"].append(f"{name}: {exc}")
    finally:
        record["phases_s"][name] = round(time.monotonic() - began, 3)
