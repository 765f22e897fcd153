"""facts.md's "Acceptance checks": the keys of each check's per-GPU entry and of its objects,
written once for the tests that hold replayed facts to them."""

from __future__ import annotations

# facts.md, "Acceptance checks": the keys of each per-GPU entry, and of its objects
IDENTITY = {"gpu", "uuid", "pci_bus_id"}
MEMTEST_KEYS = IDENTITY | {"bytes_tested", "patterns", "passes", "bad_words", "first_bad",
                           "ecc_before", "ecc_after", "seconds"}  # fmt: skip
ECC_KEYS = {"volatile_corrected", "volatile_uncorrected", "remap_pending", "remap_failure",
            "retired_pages"}  # fmt: skip
COMPUTE_KEYS = IDENTITY | {"dtype", "shape", "repeats", "mismatched_repeats", "digest",
                           "matches_node", "reference_max_rel_error", "tflops_median"}  # fmt: skip
SOAK_KEYS = IDENTITY | {"seconds", "samples", "steady_from_s", "power_w", "power_limit_w",
                        "sm_clock_mhz", "temp_c", "memory_temp_c", "reasons_s", "iteration_ms",
                        "tflops"}  # fmt: skip
SOAK_OBJECTS = {
    "power_w": {"median", "p5"},
    "sm_clock_mhz": {"median", "p5", "min"},
    "temp_c": {"max", "slope_last30_c_per_min"},
    "memory_temp_c": {"max"},
    "reasons_s": {
        "gpu_idle",
        "applications_clocks_setting",
        "sw_power_cap",
        "hw_slowdown",
        "sync_boost",
        "sw_thermal_slowdown",
        "hw_thermal_slowdown",
        "hw_power_brake_slowdown",
    },
    "iteration_ms": {"p50", "p99", "cv"},
    "tflops": {"median", "p1"},
}
