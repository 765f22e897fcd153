"""The compute and silent-data-corruption screen on one GPU, and the soak's load.

compute: the seeded product repeated; every repeat's digest against the first repeat's, one
tile against fp64, and the product's speed. soak: the same product back to back for the
phase, every iteration timed, the digest checked every DIGEST_EVERY iterations against the
compute phase's (a GPU that computes wrong answers only when hot).
"""

from __future__ import annotations

import statistics
import time

from .child import Channel
from .gemm import Gemm, tolerance

MIN_REPEATS = 8
TIMED_BATCH = 16
DIGEST_EVERY = 50


def tflops(n: int, milliseconds: float) -> float:
    return 2.0 * n**3 / (milliseconds * 1e-3) / 1e12


def run_compute(
    channel: Channel, gemm: Gemm, seconds: float, inject: str | None
) -> dict[str, object]:
    began = time.monotonic()
    deadline = began + seconds
    n = gemm.n
    channel.send("ready", engine=gemm.engine)
    channel.doing("compute: warm-up product")
    gemm.run()
    first = gemm.digest()
    mismatched: list[int] = []
    times: list[float] = []
    repeats = 1
    while not channel.stop.is_set() and (repeats < MIN_REPEATS or time.monotonic() < deadline):
        channel.doing(f"compute: repeat {repeats + 1}")
        times.extend(gemm.timed(TIMED_BATCH))
        if inject == "compute-bitflip" and repeats == 3:
            gemm.flip_bit()
        if gemm.digest() != first:
            mismatched.append(repeats)
        repeats += 1
        channel.send("figure", value=round(tflops(n, statistics.median(times)), 1),
                     unit="TFLOP/s")  # fmt: skip
    channel.doing("compute: fp64 reference tile")
    error = gemm.reference_error()
    return {
        "dtype": "bf16",
        "shape": [n, n, n],
        "repeats": repeats,
        "mismatched": mismatched,
        "digest": f"{first:016x}",
        "reference_max_rel_error": error,
        "reference_tolerance": tolerance(n),
        "tflops_median": round(tflops(n, statistics.median(times)), 1) if times else None,
        "seconds": round(time.monotonic() - began, 3),
    }


def run_soak(
    channel: Channel, gemm: Gemm, seconds: float, expect_digest: int | None
) -> dict[str, object]:
    began = time.monotonic()
    deadline = began + seconds
    n = gemm.n
    channel.send("ready", engine=gemm.engine)
    channel.doing("soak: full load")
    checked = 0
    mismatched: list[int] = []
    iterations = 0
    last_sent = began
    pending: list[float] = []
    while not channel.stop.is_set() and time.monotonic() < deadline:
        batch = gemm.timed(TIMED_BATCH)
        iterations += len(batch)
        pending.extend(batch)
        if iterations % DIGEST_EVERY < TIMED_BATCH:
            digest = gemm.digest()
            checked += 1
            if expect_digest is None:
                expect_digest = digest
            elif digest != expect_digest:
                mismatched.append(iterations)
        now = time.monotonic()
        if now - last_sent >= 1.0:
            channel.send("times", t=round(now - began, 3), ms=[round(t, 4) for t in pending])
            channel.send("figure", value=round(tflops(n, statistics.median(pending)), 1),
                         unit="TFLOP/s")  # fmt: skip
            pending = []
            last_sent = now
    if pending:
        channel.send(
            "times", t=round(time.monotonic() - began, 3), ms=[round(t, 4) for t in pending]
        )
    return {
        "dtype": "bf16",
        "shape": [n, n, n],
        "iterations": iterations,
        "digest_checks": checked,
        "digest_mismatches": mismatched,
        "seconds": round(time.monotonic() - began, 3),
    }
