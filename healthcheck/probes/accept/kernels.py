"""The acceptance kernels (accept.ptx, built from accept.cu) on one GPU, through the driver API.

One `Kernels` per GPU: it retains the device's primary context (the one PyTorch uses too, so a
torch engine can hand its tensors' pointers to these kernels), loads the module and launches
on one stream. Every pointer is a device address (int); every call checks its CUresult.
"""

from __future__ import annotations

import struct
from importlib.resources import files

from msgspec import Struct

from ..bandwidth.cuda import CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, Driver

GEMM_TILE = 128  # M and N are multiples of this, K of GEMM_K_STEP
GEMM_K_STEP = 32
GEMM_THREADS = 256
GEMM_SHARED_BYTES = 3 * (128 + 128) * 40 * 2  # STAGES * (BM + BN) * LDS * sizeof(bf16)
THREADS = 256
ERRS_WORDS = 5

PATTERN_ADDRESS = 0
PATTERN_CONSTANT = 1
PATTERN_RANDOM = 2
ALL_ONES = (1 << 64) - 1


class BadWords(Struct, frozen=True):
    """What one check pass found: how many words differed, and the first one it saw."""

    count: int
    index: int | None = None
    expected: int | None = None
    read: int | None = None


def ptx_image() -> bytes:
    return files("sitscheck.probes.accept").joinpath("accept.ptx").read_bytes() + b"\0"


class Kernels:
    """accept.ptx loaded in `ordinal`'s primary context (made current on the calling thread)."""

    def __init__(self, driver: Driver, ordinal: int) -> None:
        self.driver = driver
        self.device = driver.device(ordinal)
        self.context = driver.retain_context(self.device)
        driver.set_context(self.context)
        self.sms = driver.attribute(self.device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        module = driver.load_module(ptx_image())
        self._fn = {
            name: driver.function(module, name.encode())
            for name in ("fill_bf16", "gemm_bf16_tn", "gemm_ref_f64", "digest_u16", "mt_fill",
                         "mt_check")
        }  # fmt: skip
        driver.allow_shared(self._fn["gemm_bf16_tn"], GEMM_SHARED_BYTES)
        self.stream = driver.stream()

    def bind(self) -> None:
        """Make this GPU's context current on the calling thread."""
        self.driver.set_context(self.context)

    def release(self) -> None:
        self.driver.release("cuDevicePrimaryCtxRelease_v2", self.device)

    def _grid(self) -> int:
        return self.sms * 8

    def fill_bf16(self, pointer: int, count: int, seed: int, stream: int | None = None) -> None:
        self._launch("fill_bf16", self._grid(), THREADS, [pointer, count, seed], stream)

    def gemm(
        self, a: int, b: int, c: int, m: int, n: int, k: int, stream: int | None = None
    ) -> None:
        """C[m,n] = A[m,k] . B[n,k]^T (bf16, fp32 accumulation, bf16 out)."""
        if m % GEMM_TILE or n % GEMM_TILE or k % GEMM_K_STEP:
            raise ValueError(f"GEMM shape {m}x{n}x{k} is not a multiple of the kernel's tiles")
        blocks = (m // GEMM_TILE) * (n // GEMM_TILE)
        self.driver.launch(
            self._fn["gemm_bf16_tn"], blocks, GEMM_THREADS, self._stream(stream),
            [a, b, c, m, n, k], shared=GEMM_SHARED_BYTES,
        )  # fmt: skip

    def reference_tile(
        self, a: int, b: int, k: int, row0: int, col0: int, size: int
    ) -> list[float]:
        """The fp64 product of a size x size tile at (row0, col0), read back to the host."""
        out = self.driver.alloc(size * size * 8)
        try:
            self._launch("gemm_ref_f64", self._grid(), THREADS,
                         [a, b, out, k, row0, col0, size, size], None)  # fmt: skip
            self.driver.synchronize(self.stream)
            raw = self.driver.read(out, size * size * 8)
        finally:
            self.driver.release("cuMemFree_v2", out)
        return list(struct.unpack(f"<{size * size}d", raw))

    def digest(self, pointer: int, count_u16: int, scratch: int, stream: int | None = None) -> int:
        """The order-independent digest of `count_u16` 16-bit words (`scratch`: 8 device bytes)."""
        self.driver.write(scratch, b"\0" * 8)
        self._launch("digest_u16", self._grid(), THREADS, [pointer, count_u16, scratch], stream)
        self.driver.synchronize(self._stream(stream))
        return int.from_bytes(self.driver.read(scratch, 8), "little")

    def mt_fill(self, buf: int, words: int, mode: int, param: int, flip: int) -> None:
        self._launch("mt_fill", self._grid(), THREADS, [buf, words, mode, param, flip], None)

    def mt_check(
        self, buf: int, words: int, mode: int, param: int, flip: int, errs: int, invert: bool
    ) -> None:
        self._launch("mt_check", self._grid(), THREADS,
                     [buf, words, mode, param, flip, errs, int(invert)], None)  # fmt: skip

    def read_errs(self, errs: int) -> BadWords:
        count, claimed, index, expected, read = struct.unpack(
            "<5Q", self.driver.read(errs, ERRS_WORDS * 8)
        )
        if not count:
            return BadWords(0)
        return BadWords(count, index if claimed else None, expected, read)

    def _stream(self, stream: int | None) -> int:
        return self.stream if stream is None else stream

    def _launch(
        self, name: str, grid: int, block: int, args: list[int], stream: int | None
    ) -> None:
        self.driver.launch(self._fn[name], grid, block, self._stream(stream), args)
