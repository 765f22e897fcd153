"""The `multigpu` check's finding codes (the low bus bandwidth verdicts are rules:
rules/bandwidth.yaml)."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

FABRIC = (
    "check the NVLink fabric: `nvidia-smi nvlink -s` and `-e` (inactive links, error counters), "
    "on NVSwitch boards the fabric manager (`systemctl status nvidia-fabricmanager`, "
    "`nvidia-smi -q | grep -A2 Fabric`); rerun `sitscheck accept`; a node that fails again "
    "needs its GPU or baseboard serviced"
)

CODES = Codes(
    [
        CodeSpec("multigpu.allreduce_wrong", Severity.CRITICAL,
                 "silent data corruption suspected: NCCL's all-reduce left wrong sums in the "
                 "GPU's memory", "drain the node now (its results cannot be trusted); " + FABRIC,
                 FindingKind.CONDITION, ActionCategory.ISOLATE),
        CodeSpec("multigpu.workload_hung", Severity.CRITICAL,
                 "NCCL's all-reduce stopped responding and was killed",
                 "reboot the node (it resets the GPUs and the NVSwitch fabric); " + FABRIC,
                 FindingKind.CONDITION, ActionCategory.REBOOT),
    ]
)  # fmt: skip
