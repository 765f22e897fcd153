"""The NVML call behind each snapshot key, the reading states, and the names of the two forms
the GPU evidence comes in (for evidence references and messages)."""

from __future__ import annotations

from collections.abc import Mapping

NVML = "nvml"
SMI = "nvidia-smi"
# The shortest interval between two counter readings over which a rate is computed: a
# measurement floor, not a health threshold (those are rule params).
MIN_RATE_WINDOW_S = 1.0

# States that mean the reading failed: the check that needs it cannot decide (UNKNOWN).
FAULT_STATES = frozenset({"error", "timeout"})
LOST_STATES = frozenset({"gpu_lost", "reset_required"})

# The NVML call behind each snapshot key (for evidence and messages).
NVML_CALLS: Mapping[str, str] = {
    "pcie.gen_current": "nvmlDeviceGetCurrPcieLinkGeneration",
    "pcie.gen_max": "nvmlDeviceGetMaxPcieLinkGeneration",
    "pcie.gen_device_max": "nvmlDeviceGetGpuMaxPcieLinkGeneration",
    "pcie.width_current": "nvmlDeviceGetCurrPcieLinkWidth",
    "pcie.width_max": "nvmlDeviceGetMaxPcieLinkWidth",
    "pcie.replay": "nvmlDeviceGetPcieReplayCounter",
    "pcie.tx": "nvmlDeviceGetPcieThroughput",
    "pcie.rx": "nvmlDeviceGetPcieThroughput",
    "utilization": "nvmlDeviceGetUtilizationRates",
    "power.draw": "nvmlDeviceGetPowerUsage",
    "power.limit": "nvmlDeviceGetEnforcedPowerLimit",
    "power.default_limit": "nvmlDeviceGetPowerManagementDefaultLimit",
    "clocks.sm": "nvmlDeviceGetClockInfo",
    "clocks.mem": "nvmlDeviceGetClockInfo",
    "clocks_max.sm": "nvmlDeviceGetMaxClockInfo",
    "clocks_max.mem": "nvmlDeviceGetMaxClockInfo",
    "temperature.gpu": "nvmlDeviceGetTemperature",
    "temperature.memory": "nvmlDeviceGetFieldValues",
    "clock_event_reasons": "nvmlDeviceGetCurrentClocksEventReasons",
    "gpm": "nvmlGpmMetricsGet",
    "ecc.mode": "nvmlDeviceGetEccMode",
    "ecc": "nvmlDeviceGetTotalEccErrors",
    "remap": "nvmlDeviceGetRemappedRows",
    "remap.histogram": "nvmlDeviceGetRowRemapperHistogram",
    "retired_pages": "nvmlDeviceGetRetiredPages",
    "retired_pages.pending": "nvmlDeviceGetRetiredPagesPendingStatus",
    "nvlink": "nvmlDeviceGetNvLinkState",
    "nvlink.errors": "nvmlDeviceGetNvLinkErrorCounter",
    "violations": "nvmlDeviceGetViolationStatus",
    "persistence_mode": "nvmlDeviceGetPersistenceMode",
    "recovery_action": "nvmlDeviceGetFieldValues(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION)",
}
