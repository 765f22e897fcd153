"""Writes tests/accept/data/h200x1/accept/*.json: one healthy H200's acceptance records.

`python tests/accept/data/make_records.py` rewrites them (the tests read the files, never
this script). The records have the shape `sitscheck accept` writes (healthcheck/accept/phases.py)
for the GPU of the recorded bundle tests/bundles/h200x1-v3 (its bus id and UUID), and the
figures measured on a real H200 SXM 141 GB, driver 580 (shared/docs/quick-check.md and the
lead's three acceptance runs on it, /work/accept-data/a1.json):

- memtest: 137,592,045,568 bytes, patterns address, walking_ones, inversions, random, 2 passes
  in 1.189 s, no bad word, ECC counters 0 before and after (a1);
- compute: torch, 8192³ bf16, 71 repeats, digest 45b692eb637d213d, fp64 tile 0.003881 off
  (tolerance 0.00782 for k = 8192, gemm.tolerance), 687.1 TFLOP/s median (a1);
- soak: torch, 120 s (the default budget's soak), sampled at 1 Hz from 3 s before the load
  (the children start) to 1 s after it: idle 78 W, 345 MHz, 38 °C, reason 0x1 before; the
  first loaded second boosts to 1,980 MHz at 520 W; then 687-696 W of 700 with reason 0x4 (SW
  power cap) alone, SM clock 1,440-1,530 MHz, the GPU warming from 45 to 60-61 °C over its first
  minute, HBM to 53 °C; iteration times with median 1.656 ms and p99 1.693 ms (664 TFLOP/s),
  20 a second (the real child sends ~600; the statistics need no more).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BUNDLE = HERE.parents[1] / "bundles" / "h200x1-v3"
OUT = HERE / "h200x1" / "accept"

POWER_W = [690.97, 693.4, 688.2, 695.1, 691.5, 687.68, 692.3, 689.9, 694.6, 690.1]
SM_MHZ = [1485, 1530, 1455, 1500, 1470, 1440, 1515, 1485, 1500, 1470]
ITERATION_MS = [
    1.600, 1.620, 1.635, 1.645, 1.650, 1.652, 1.654, 1.655, 1.656, 1.656,
    1.657, 1.658, 1.660, 1.662, 1.665, 1.670, 1.675, 1.680, 1.688, 1.693,
]  # fmt: skip
LOAD_STARTED_S = 3.0
SOAK_S = 120.0


def identity() -> dict[str, Any]:
    gpu = json.loads((BUNDLE / "nvml.json").read_text())["gpus"][0]
    return {
        "index": gpu["index"],
        "uuid": gpu["uuid"],
        "pci_bus_id": gpu["pci_bus_id"],
        "name": gpu["name"],
    }


def record(phase: str, engine: str, planned_s: float, result: dict[str, Any]) -> dict[str, Any]:
    return {
        "format": "sitscheck-accept",
        "version": 1,
        "phase": phase,
        "engine": engine,
        "planned_s": planned_s,
        "started_at": "2026-12-02T01:10:00+00:00",
        "skipped": None,
        "gpus": [
            {
                **identity(),
                "status": "ok",
                "reason": None,
                "doing": f"{phase}: done",
                "seconds": result["seconds"],
                "result": result,
            }
        ],
    }


def memtest() -> dict[str, Any]:
    ecc = {
        "volatile_corrected": 0,
        "volatile_uncorrected": 0,
        "remap_pending": False,
        "remap_failure": False,
        "retired_pages": 0,
    }
    return record("memtest", "ptx", 24.0, {
        "bytes_tested": 137592045568,
        "patterns": ["address", "walking_ones", "inversions", "random"],
        "passes": 2,
        "bad_words": 0,
        "first_bad": None,
        "seconds": 1.189,
        "gbs": 3702.6,
        "ecc_before": ecc,
        "ecc_after": dict(ecc),
    })  # fmt: skip


def compute() -> dict[str, Any]:
    return record("compute", "torch", 30.0, {
        "engine": "torch",
        "dtype": "bf16",
        "shape": [8192, 8192, 8192],
        "repeats": 71,
        "mismatched": [],
        "digest": "45b692eb637d213d",
        "reference_max_rel_error": 0.003881445523748192,
        "reference_tolerance": 0.007823289593218789,
        "tflops_median": 687.1,
        "seconds": 24.512,
    })  # fmt: skip


def sample(t: float) -> dict[str, Any]:
    load = t - LOAD_STARTED_S
    if load < 0 or load > SOAK_S:  # before the children's load, and the tail after it
        power, clock, reasons = (78.4, 345, 0x1) if load < 0 else (131.2, 1980, 0x0)
        temp, mem_temp = (38, 41) if load < 0 else (60, 52)
    elif load < 2:  # the first second: boost, before the power cap bites
        power, clock, reasons, temp, mem_temp = 520.3, 1980, 0x0, 45, 44
    else:
        step = int(load)
        power, clock, reasons = POWER_W[step % 10], SM_MHZ[step % 10], 0x4
        temp = min(45 + step // 4, 60) + (step % 2 if step >= 64 else 0)
        mem_temp = min(44 + step // 6, 53)
    return {
        "t": round(t, 3),
        "sm_clock_mhz": clock,
        "mem_clock_mhz": 3201,
        "power_w": power,
        "power_limit_w": 700.0,
        "temp_c": temp,
        "mem_temp_c": mem_temp,
        "clock_event_reasons": reasons,
    }


def soak() -> dict[str, Any]:
    samples = [sample(float(t)) for t in range(int(LOAD_STARTED_S + SOAK_S) + 2)]
    times = [[float(t), list(ITERATION_MS)] for t in range(1, int(SOAK_S) + 1)]
    return record("soak", "torch", 125.0, {
        "engine": "torch",
        "dtype": "bf16",
        "shape": [8192, 8192, 8192],
        "iterations": len(times) * len(ITERATION_MS),
        "digest_checks": 144,
        "digest_mismatches": [],
        "seconds": SOAK_S,
        "times": times,
        "samples": samples,
        "load_started_s": LOAD_STARTED_S,
        "max_sm_clock_mhz": 1980,
        "violation_ns": {"power": [0, 118000000000], "thermal": [0, 0]},
    })  # fmt: skip


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in (("memtest", memtest()), ("compute", compute()), ("soak", soak())):
        (OUT / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
