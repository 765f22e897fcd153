"""The seeded bf16 GEMM both acceptance engines run, and what is measured of it.

An engine owns A, B and C on one GPU: A[n,k] and B[n,k] filled by `fill_bf16` from fixed
seeds (the same matrices on every GPU, every run, whatever the engine), C = A . B^T in bf16.
`torch` multiplies with PyTorch (cuBLAS); `ptx` with the tensor-core kernel of accept.ptx.
Both read back through the same digest and fp64 reference kernels, so the figures compare.

Determinism: the inputs are a function of (seed, index) alone; the PTX kernel accumulates each
output in one fixed order (no split-K, no atomics); cuBLAS is deterministic for one GPU model,
shape and library build (measured: bit-identical across repeats, processes and allocations),
and the digest is an order-independent wrapping sum, so its value depends on the bits alone.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Protocol

from ..bandwidth.cuda import Driver
from .kernels import Kernels

SEED_A = 0x5EED_A
SEED_B = 0x5EED_B
TILE = 64  # the reference tile's side
BF16_UNIT_ROUNDOFF = 2.0**-8  # the output's rounding: half an ulp of an 8-bit significand
FP32_UNIT_ROUNDOFF = 2.0**-24


def tolerance(k: int) -> float:
    """The largest relative error (to max(|ref|, the tile's rms)) a correct product may show:
    the bf16 rounding of the output, plus fp32 accumulation over k terms (a random walk:
    sqrt(k) roundings of the running sum), with a factor of 2 for the tensor cores' own
    internal order. A healthy H200 measured 0.0038 for k = 8192 against 0.0081."""
    return 2.0 * (BF16_UNIT_ROUNDOFF + math.sqrt(k) * FP32_UNIT_ROUNDOFF)


def max_rel_error(got: Sequence[float], reference: Sequence[float]) -> float:
    """The largest error of `got` relative to max(|reference|, the reference's rms); NaN where
    `got` holds a NaN (max() would keep or skip one by where it stands: a product of NaNs must
    never read as accurate)."""
    rms = math.sqrt(sum(r * r for r in reference) / len(reference)) or 1.0
    errors = [abs(g - r) / max(abs(r), rms) for g, r in zip(got, reference, strict=True)]
    return math.nan if any(math.isnan(e) for e in errors) else max(errors)


class Gemm(Protocol):
    engine: str
    n: int

    def run(self) -> None:
        """Enqueue one product."""

    def timed(self, iterations: int) -> list[float]:
        """Run `iterations` products back to back; each one's milliseconds (GPU events)."""

    def digest(self) -> int:
        """C's digest (waits for the products enqueued)."""

    def flip_bit(self) -> None:
        """Test-only fault: flip one bit of C (the `--inject compute-bitflip` switch)."""

    def reference_error(self) -> float:
        """The largest relative error of one tile of C against its fp64 product."""

    def close(self) -> None: ...


class _Buffers:
    """A, B, C and a digest word on the device, filled from the seeds."""

    def __init__(self, kernels: Kernels, n: int) -> None:
        self.kernels = kernels
        self.n = n
        driver = kernels.driver
        self.a, self.b, self.c = (driver.alloc(n * n * 2) for _ in range(3))
        self.scratch = driver.alloc(8)
        kernels.fill_bf16(self.a, n * n, SEED_A)
        kernels.fill_bf16(self.b, n * n, SEED_B)
        driver.synchronize(kernels.stream)

    def digest(self) -> int:
        return self.kernels.digest(self.c, self.n * self.n, self.scratch)

    def flip_bit(self) -> None:
        driver = self.kernels.driver
        word = driver.read(self.c, 2)
        driver.write(self.c, bytes([word[0] ^ 0x01, word[1]]))

    def reference_error(self) -> float:
        n = self.n
        row0, col0 = (n // 2) // TILE * TILE, (n // 3) // TILE * TILE
        reference = self.kernels.reference_tile(self.a, self.b, n, row0, col0, TILE)
        driver = self.kernels.driver
        got: list[float] = []
        for i in range(TILE):
            raw = driver.read(self.c + ((row0 + i) * n + col0) * 2, TILE * 2)
            got.extend(_bf16_to_float(v) for v in struct.unpack(f"<{TILE}H", raw))
        return max_rel_error(got, reference)

    def free(self) -> None:
        for pointer in (self.a, self.b, self.c, self.scratch):
            self.kernels.driver.release("cuMemFree_v2", pointer)


def _bf16_to_float(bits: int) -> float:
    value: float = struct.unpack("<f", struct.pack("<I", bits << 16))[0]
    return value


class PtxGemm:
    """The tensor-core kernel of accept.ptx (mma.sync m16n8k16), through the driver API."""

    engine = "ptx"

    def __init__(self, kernels: Kernels, n: int) -> None:
        self.n = n
        self._kernels = kernels
        self._buffers = _Buffers(kernels, n)
        self._events = [kernels.driver.event() for _ in range(2)]

    def run(self) -> None:
        b = self._buffers
        self._kernels.gemm(b.a, b.b, b.c, self.n, self.n, self.n)

    def timed(self, iterations: int) -> list[float]:
        driver, stream = self._kernels.driver, self._kernels.stream
        start, stop = self._events
        times = []
        for _ in range(iterations):
            driver.record(start, stream)
            self.run()
            driver.record(stop, stream)
            times.append(driver.elapsed_ms(start, stop))
        return times

    def digest(self) -> int:
        return self._buffers.digest()

    def flip_bit(self) -> None:
        self._buffers.flip_bit()

    def reference_error(self) -> float:
        return self._buffers.reference_error()

    def close(self) -> None:
        self._buffers.free()


class TorchGemm:
    """PyTorch's matmul (cuBLAS) over the same seeded matrices."""

    engine = "torch"

    def __init__(self, kernels: Kernels, n: int) -> None:
        import torch

        self.n = n
        self._torch = torch
        self._kernels = kernels
        device = torch.device("cuda", 0)
        torch.cuda.set_device(device)
        self._a = torch.empty((n, n), dtype=torch.bfloat16, device=device)
        self._b = torch.empty((n, n), dtype=torch.bfloat16, device=device)
        self._c = torch.empty((n, n), dtype=torch.bfloat16, device=device)
        torch.cuda.synchronize()
        kernels.bind()
        self._scratch = kernels.driver.alloc(8)
        kernels.fill_bf16(self._a.data_ptr(), n * n, SEED_A)
        kernels.fill_bf16(self._b.data_ptr(), n * n, SEED_B)
        kernels.driver.synchronize(kernels.stream)
        self._view = _TorchView(kernels, self)

    def run(self) -> None:
        self._torch.matmul(self._a, self._b.T, out=self._c)

    def timed(self, iterations: int) -> list[float]:
        torch = self._torch
        pairs = [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
            for _ in range(iterations)
        ]
        for start, stop in pairs:
            start.record()
            self.run()
            stop.record()
        torch.cuda.synchronize()
        return [float(start.elapsed_time(stop)) for start, stop in pairs]

    def digest(self) -> int:
        self._torch.cuda.synchronize()
        return self._view.digest()

    def flip_bit(self) -> None:
        self._torch.cuda.synchronize()
        self._view.flip_bit()

    def reference_error(self) -> float:
        self._torch.cuda.synchronize()
        return self._view.reference_error()

    def close(self) -> None:
        self._kernels.driver.release("cuMemFree_v2", self._scratch)
        del self._a, self._b, self._c
        self._torch.cuda.empty_cache()

    def pointers(self) -> tuple[int, int, int, int]:
        return self._a.data_ptr(), self._b.data_ptr(), self._c.data_ptr(), self._scratch


class _TorchView(_Buffers):
    """The shared digest/reference code over PyTorch's tensors (no allocation of its own)."""

    def __init__(self, kernels: Kernels, owner: TorchGemm) -> None:
        self.kernels = kernels
        self.n = owner.n
        self.a, self.b, self.c, self.scratch = owner.pointers()


def torch_available() -> str | None:
    """None when PyTorch with CUDA imports here, else why not."""
    try:
        import torch
    except ImportError as exc:
        return f"PyTorch is not installed ({exc})"
    if not torch.cuda.is_available():
        return "PyTorch sees no CUDA device"
    return None


def open_gemm(engine: str, driver: Driver, kernels: Kernels, n: int) -> Gemm:
    """`engine`: "torch" or "ptx" (the caller resolved "auto")."""
    del driver
    if engine == "torch":
        return TorchGemm(kernels, n)
    return PtxGemm(kernels, n)
