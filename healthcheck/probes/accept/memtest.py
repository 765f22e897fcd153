"""The memory test on one GPU: at least `fraction` of its free memory, pattern after pattern,
pass after pass until the phase's time is up.

A pass runs, over the whole buffer, each as fill → check (and write the inverse) → check:
  address      each word holds its own address (finds address-line faults, aliasing)
  walking_ones a single set bit, moving one place each pass (stuck-at and coupling faults)
  inversions   0x5555… then its inverse (the moving-inversions step: every bit flips once)
  random       a seeded pseudo-random word per address (pattern-sensitive faults)
Each check counts the words that differ and keeps the first one seen (index, expected, read).
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from ..bandwidth.cuda import CudaError, Driver
from .child import Channel
from .kernels import ALL_ONES, PATTERN_ADDRESS, PATTERN_CONSTANT, PATTERN_RANDOM, Kernels

PATTERNS = ("address", "walking_ones", "inversions", "random")
ALIGN = 2 << 20
MIN_FRACTION = 0.90


def pattern_steps(pass_number: int) -> Iterator[tuple[str, int, int]]:
    """(name, mode, param) of each pattern of pass `pass_number` (from 0)."""
    yield "address", PATTERN_ADDRESS, 0
    yield "walking_ones", PATTERN_CONSTANT, 1 << (pass_number % 64)
    yield "inversions", PATTERN_CONSTANT, 0x5555_5555_5555_5555
    yield "random", PATTERN_RANDOM, 0x9E37_79B9 + pass_number


def allocate(driver: Driver, fraction: float) -> tuple[int, int]:
    """(pointer, bytes): the largest block from `fraction` of free memory down to MIN_FRACTION."""
    free, _ = driver.memory_info()
    wanted = fraction
    while True:
        nbytes = int(free * wanted) // ALIGN * ALIGN
        try:
            return driver.alloc(nbytes), nbytes
        except CudaError:
            if wanted - 0.01 < MIN_FRACTION:
                raise
            wanted -= 0.01


def run_memtest(
    channel: Channel, driver: Driver, kernels: Kernels, seconds: float, fraction: float,
    inject: str | None,
) -> dict[str, object]:  # fmt: skip
    began = time.monotonic()
    deadline = began + seconds
    buffer, nbytes = allocate(driver, fraction)
    errs = driver.alloc(64)
    words = nbytes // 8
    testing = time.monotonic()  # the test's own time: not the allocation's nor the release's
    run: list[str] = []
    passes = bad = 0
    first: dict[str, object] | None = None
    channel.send("ready", engine="ptx")
    try:
        while not channel.stop.is_set() and (passes == 0 or time.monotonic() < deadline):
            for name, mode, param in pattern_steps(passes):
                if channel.stop.is_set():
                    break
                channel.doing(f"memtest: {name}, pass {passes + 1}")
                driver.write(errs, b"\0" * 40)
                kernels.mt_fill(buffer, words, mode, param, 0)
                if inject == "memtest-word" and passes == 0 and name == "random":
                    driver.synchronize(kernels.stream)
                    _overwrite(driver, buffer, words)
                kernels.mt_check(buffer, words, mode, param, 0, errs, True)
                kernels.mt_check(buffer, words, mode, param, ALL_ONES, errs, False)
                driver.synchronize(kernels.stream)
                found = kernels.read_errs(errs)
                if name not in run:
                    run.append(name)
                if found.count:
                    bad += found.count
                    if first is None and found.index is not None:
                        first = {
                            "address": buffer + found.index * 8,
                            "expected": f"0x{found.expected or 0:016x}",
                            "read": f"0x{found.read or 0:016x}",
                        }
            else:
                passes += 1
                elapsed = time.monotonic() - testing
                channel.send("figure", value=round(nbytes * 4 * len(PATTERNS) * passes
                                                    / elapsed / 1e9, 1), unit="GB/s")  # fmt: skip
                continue
            break
        seconds_run = time.monotonic() - testing
    finally:
        driver.release("cuMemFree_v2", buffer)
        driver.release("cuMemFree_v2", errs)
    return {
        "bytes_tested": nbytes,
        "patterns": run,
        "passes": passes,
        "bad_words": bad,
        "first_bad": first,
        "seconds": round(seconds_run, 3),
        # each pass reads or writes every word 4 times per pattern (fill, check+invert, check)
        "gbs": round(nbytes * 4 * len(PATTERNS) * passes / seconds_run / 1e9, 1)
        if passes and seconds_run > 0 else None,
    }  # fmt: skip


def _overwrite(driver: Driver, buffer: int, words: int) -> None:
    """The test-only fault: one word in the middle of the buffer overwritten between the
    pattern's write and its check."""
    driver.write(buffer + (words // 2) * 8, (0x0BAD_F00D_DEAD_BEEF).to_bytes(8, "little"))
