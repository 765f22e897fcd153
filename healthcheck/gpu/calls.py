"""The NVML call behind each snapshot key, the reading states, and the names of the forms the
GPU evidence comes in (for evidence references and messages), in the order fusion trusts them."""

from __future__ import annotations

from collections.abc import Mapping

NVML = "nvml"
SMI = "nvidia-smi"  # --query-gpu CSV and dmon rows
SMI_Q = "nvidia-smi -q"
SMI_L = "nvidia-smi -L"
SYSFS = "sysfs"
# identities only, filled where no source of this run has them (`resolve`): the daemon's state
LAST_KNOWN = "last known inventory"
# Which source wins where two give a reading of one value (the NVML snapshot is one session
# read under deadlines; the CSV is what was asked for by name; -q is the full text; -L lists).
PRECEDENCE = (NVML, SMI, SMI_Q, SMI_L, SYSFS)
# How reports name each source.
SOURCE_NAMES: Mapping[str, str] = {
    NVML: "nvml",
    SMI: "nvidia-smi --query-gpu",
    SMI_Q: "nvidia-smi -q",
    SMI_L: "nvidia-smi -L",
    SYSFS: "sysfs",
    LAST_KNOWN: "last known inventory",
}


def source_name(source: str) -> str:
    return SOURCE_NAMES.get(source, source)


# Sources of identities only: no reading for a GPU check to judge.
IDENTITY_ONLY = frozenset({SMI_L, SYSFS})
# The shortest interval between two counter readings over which a rate is computed: a
# measurement floor, not a health threshold (those are rule params).
MIN_RATE_WINDOW_S = 1.0

# States that mean the reading failed: the check that needs it cannot decide (UNKNOWN).
FAULT_STATES = frozenset({"error", "timeout"})
LOST_STATES = frozenset({"gpu_lost", "reset_required"})

# Unavailable keys whose reading sits at another path of the record.
KEY_PATHS: Mapping[str, str] = {
    "pcie.replay": "pcie.replay_counter_start",
    "power.limit": "power.enforced_limit_w",
    "power.default_limit": "power.default_limit_w",
    "clocks_max.sm": "clocks_max_mhz.sm",
    "clocks_max.mem": "clocks_max_mhz.mem",
    "ecc.mode": "ecc.mode_enabled",
    "violations": "violations_ns_end",
    "nvlink.errors": "nvlink",
}

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
