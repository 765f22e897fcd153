"""The `topology` check's finding codes: severity, meaning, action and kind, written once."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

CODES = Codes(
    [
        CodeSpec(
            "topology.unparsable",
            Severity.UNKNOWN,
            "nvidia-smi topo -m printed no matrix (an error text instead)",
            "run nvidia-smi topo -m by hand: an error text means the driver did not answer",
            FindingKind.CONDITION,
            ActionCategory.RERUN,
        ),
        CodeSpec(
            "topology.gpu_missing",
            Severity.CRITICAL,
            "a GPU the driver lists is missing from the topology matrix",
            (
                "check the kernel log for Xid 79/AER on the GPU's bus, nvidia-smi -q -i N; "
                "reset or reseat the GPU"
            ),
            FindingKind.CONDITION,
            ActionCategory.RESET_GPU,
        ),
        CodeSpec(
            "topology.asymmetric",
            Severity.WARNING,
            "the matrix reads one link kind a→b and another b→a",
            (
                "run nvidia-smi nvlink -s on both GPUs, reset them or reboot; if it persists, "
                "drain the node for hardware inspection"
            ),
            FindingKind.CONDITION,
            ActionCategory.RESET_GPU,
        ),
        CodeSpec(
            "topology.nvml_disagrees",
            Severity.WARNING,
            (
                "the matrix and NVML disagree on a pair's NVLink P2P, common PCIe ancestor or "
                "active link count, or on which GPUs exist"
            ),
            (
                "rerun; check nvidia-smi nvlink -s, nvidia-smi -q | grep -A2 Fabric and the "
                "fabric manager log"
            ),
            FindingKind.CONDITION,
            ActionCategory.RERUN,
        ),
    ]
)
