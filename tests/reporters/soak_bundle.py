"""Acceptance bundles with a soak record, for the html reporter's tests.

A recorded idle bundle (tests/bundles/h200x1-v3: one H200; h200x2-idle-v1: two) copied, plus
an `accept/soak.json` built here, seeded, from the healthy H200's figures of issue 30's
reference table (measured on the test machine, PyTorch engine): steady state within 10 s at
690-696 W of the 700 W limit, SM 1,440-1,530 MHz, 60-61 °C, SW power cap (0x4) alone,
bf16 8192³ iterations of p50 1.656 ms and CV 1.5 %. Before the steady state, what an H200
does from idle (the recorded bundle: 81 W, SM 360 MHz, 41 °C, HBM 42 °C): boost clock
(1,980 MHz, its maximum) for a second while the power rises to the cap, then the cap's clocks.
The sampler's and the child's record shapes are accept/phases.py's and workloads/gpus.py's.

`faulty` makes one GPU what a failing one looks like (FAULT_* below): the picture a reviewer
compares with the healthy one.

The record is built rather than stored: its iteration times (~600 a second a GPU, as the child
sends them) would make a 600 KB file per GPU.
"""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path
from typing import Any

BUNDLES = Path(__file__).resolve().parents[1] / "bundles"
# (bundle, its GPUs as nvidia-smi -L and the query CSV name them: index, UUID, PCI bus id)
NODES = {
    1: ("h200x1-v3", [(0, "GPU-22ccd39c-e49e-7a83-acb7-8cbd199959a5", "00000000:00:06.0")]),
    2: (
        "h200x2-idle-v1",
        [
            (0, "GPU-a80f8e97-b58f-303e-1fb8-762c9dcbe67e", "00000000:00:06.0"),
            (1, "GPU-cf161c2c-89b7-fe7d-c5cc-f4a07e8844b8", "00000000:00:07.0"),
        ],
    ),
}
SECONDS = 120
N = 8192
P50_MS = 1.656
CV = 0.015
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
# The fault (`faulty`): a GPU whose cooling falls short settles at 86 °C, past the seed's 83 °C
# scaling point; for 20 s its hardware slows it down (clocks ~1,110 MHz, ~520 W, iterations
# ~2.15 ms); one digest of the product differs (silent data corruption suspected).
FAULT_TEMP_C = 86.0
SLOWDOWN = range(60, 80)
SLOWED_MS = 2.15
FAULT_MISMATCH = 41_206


def soak_bundle(folder: Path, gpus: int, seed: int = 30, faulty: int | None = None) -> Path:
    """A copy of the recorded `gpus`-GPU bundle with a soak record in `folder`: healthy, or
    with GPU `faulty` running hot and slowed down by hardware (`FAULT`)."""
    name, identities = NODES[gpus]
    shutil.copytree(BUNDLES / name, folder)
    (folder / "accept").mkdir()
    record = soak_record(identities, random.Random(seed), faulty)
    (folder / "accept" / "soak.json").write_text(json.dumps(record), encoding="utf-8")
    return folder


def soak_record(
    identities: list[tuple[int, str, str]], rng: random.Random, faulty: int | None = None
) -> dict[str, Any]:
    return {
        "format": "sitscheck-accept",
        "version": 1,
        "phase": "soak",
        "engine": "torch",
        "planned_s": float(SECONDS),
        "started_at": "2026-12-01T11:45:02+00:00",
        "skipped": None,
        "gpus": [
            {
                "index": index,
                "uuid": uuid,
                "pci_bus_id": bus,
                "name": "NVIDIA H200",
                "status": "ok",
                "reason": None,
                "doing": "soak: full load",
                "seconds": SECONDS + 0.4,
                "result": _result(index, rng, index == faulty),
            }
            for index, uuid, bus in identities
        ],
    }


def _result(index: int, rng: random.Random, faulty: bool) -> dict[str, Any]:
    times = [
        [round(s + 0.002 * rng.random(), 3), _batch(s, rng, faulty and s in SLOWDOWN)]
        for s in range(1, SECONDS + 1)
    ]
    iterations = sum(len(batch) for _, batch in times)
    return {
        "engine": "torch",
        "dtype": "bf16",
        "shape": [N, N, N],
        "iterations": iterations,
        "digest_checks": iterations // 200,
        "digest_mismatches": [FAULT_MISMATCH] if faulty else [],
        "seconds": float(SECONDS),
        "times": times,
        "samples": [_sample(t, index, rng, faulty) for t in range(SECONDS + 1)],
        "max_sm_clock_mhz": 1980,
        "violation_ns": {"power": [0, 117_000_000_000], "thermal": [0, 0]},
        "flops_per_iteration": 2 * N**3,
    }


def _batch(second: int, rng: random.Random, slowed: bool) -> list[float]:
    """One second's iteration times: faster in the first second (boost clock)."""
    centre = 1.50 if second == 1 else (SLOWED_MS if slowed else P50_MS)
    count = round(1000 / centre)
    return [round(centre * (1 + rng.gauss(0.0, CV)), 4) for _ in range(count)]


def _sample(t: int, index: int, rng: random.Random, faulty: bool) -> dict[str, Any]:
    warm = 1 - math.exp(-t / 12)  # the heat sink's time constant, about 12 s
    if t == 0:
        power, clock, reasons = 81.3, 360, 0x1  # idle, the load about to start
    elif t == 1:
        power, clock, reasons = 655.0 + 10 * rng.random(), 1980, 0x0
    elif faulty and t in SLOWDOWN:
        power = 520 + 10 * rng.random()
        clock = 15 * round((1110 + rng.uniform(-30, 30)) / 15)
        reasons = HW_SLOWDOWN | SW_POWER_CAP
    else:
        power = 690 + 6 * rng.random()
        clock = 15 * round((1485 + rng.uniform(-45, 45)) / 15)  # NVML's 15 MHz steps
        reasons = SW_POWER_CAP
    settled = FAULT_TEMP_C if faulty else 60.6 + 0.4 * index
    return {
        "t": round(t + 0.001 * rng.random(), 3),
        "sm_clock_mhz": clock,
        "mem_clock_mhz": 3201,
        "power_w": round(power, 3),
        "power_limit_w": 700.0,
        "temp_c": round(41 + (settled - 41) * warm + rng.uniform(-0.3, 0.3)),
        "mem_temp_c": round(42 + 11 * (1 - math.exp(-t / 20)) + rng.uniform(-0.3, 0.3)),
        "clock_event_reasons": reasons,
    }
