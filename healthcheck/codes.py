"""Every finding code the checks raise, per check: what it means, how bad, what to do.

Pure data for `sitscheck explain CODE` (explain.py). Xid and SXid codes (`xid.N`, `sxid.N`)
are not here: their meanings are the Xid catalog's (`sitscheck.checks.xid.catalog`). A check
that adds a code adds it here too (tests/rules/test_rules_explain.py reads the checks' sources
for `code=` and fails on a code this module does not know).

Per check: `<CHECK>_CODES` (code → meaning). For every code: `SEVERITY` (as the check raises
it) and `ACTION` (what an operator does next; the check's own finding carries the full text).
Per check: `CHECK_LAYER` and `CHECK_EVIDENCE` (what the check reads).
"""

from __future__ import annotations

CHECK_LAYER: dict[str, str] = {
    "driver": "driver",
    "xid": "driver",
    "pcie_aer": "hardware",
    "pcie_link": "hardware",
    "memory_errors": "hardware",
    "nvlink": "hardware",
    "topology": "hardware",
    "gpu_telemetry": "runtime",
    "tensorrt": "runtime",
}

CHECK_EVIDENCE: dict[str, str] = {
    "driver": (
        "NVML device list (name, UUID, PCI bus and device id, VBIOS, persistence mode, recovery "
        "action), else nvidia-smi -L, else nvidia-smi --query-gpu; the driver probe "
        "(/proc/driver/nvidia/version, /dev/nvidiactl)"
    ),
    "xid": "kernel log (/dev/kmsg, dmesg, journalctl -k or a file): NVRM Xid / SXid lines",
    "pcie_aer": (
        "kernel log AER reports (native and firmware-first), mapped onto each GPU's PCIe path "
        "(root port → switch ports → GPU) through sysfs; sysfs aer_dev_* counters of each port"
    ),
    "pcie_link": (
        "NVML link width/generation (current and max), sysfs current/max_link_width/speed of "
        "the GPU and every port on its path, the PCIe replay counter at both ends of the "
        "sampling window, PCIe TX/RX throughput"
    ),
    "memory_errors": (
        "NVML ECC counters (volatile and aggregate, corrected and uncorrected), row remapper "
        "(rows remapped, pending, failure, bank histogram), retired pages"
    ),
    "nvlink": (
        "NVML per-link state (active, version, remote bus id) and error counters over the window"
    ),
    "topology": (
        "nvidia-smi topo -m (GPU/NIC matrix, CPU/NUMA affinity), NVML P2P status and common "
        "ancestor per GPU pair, sysfs numa_node/local_cpulist"
    ),
    "gpu_telemetry": (
        "NVML samples over the window: utilization, power against the limit, clocks, clock "
        "event reasons, temperatures against NVML's thresholds, GPM SM/tensor/DRAM activity"
    ),
    "tensorrt": (
        "TensorRT build logs (bundle tensorrt/*.log, --trt-log): layers, fusions, fallbacks, "
        "precision fallbacks, errors, the GPU the engine was built for; the optional probe build"
    ),
}

DRIVER_CODES: dict[str, str] = {
    "driver.absent": "no NVIDIA driver on the node (no /proc/driver/nvidia, no device nodes)",
    "driver.not_loaded": "the NVIDIA driver is installed but its kernel module is not loaded",
    "driver.gpu_lost": (
        "the driver lists the GPU but it does not answer: NVML reports it lost (it fell off "
        "the bus, usually after Xid 79)"
    ),
    "driver.reset_required": "the GPU does not answer until it is reset (NVML: reset required)",
    "driver.error": "NVML could not open the GPU (a handle error other than lost or reset)",
    "driver.timeout": "opening the GPU through NVML ran past its deadline (a hung driver call)",
    "driver.no_permission": "NVML was not allowed to open the GPU (permissions, cgroup)",
    "driver.not_supported": "NVML does not support opening this GPU",
    "driver.gpu_count": "fewer (or more) GPUs answer than the node must have (--expect-gpus)",
    "driver.count_mismatch": (
        "NVML and nvidia-smi -L list different numbers of GPUs: a GPU drops in and out"
    ),
    "driver.persistence_mode_off": (
        "persistence mode is off: the driver tears the GPU down between clients and every job "
        "pays the initialisation latency"
    ),
    "driver.recovery_action": (
        "the driver asks for a recovery action on the GPU (reset, reboot, drain P2P, drain "
        "and reset) after an error it could not contain"
    ),
    "driver.vbios_mismatch": (
        "GPUs of the same model run different VBIOS versions (seed 003 §4.4: cold-start "
        "latency variance followed firmware)"
    ),
}

PCIE_AER_CODES: dict[str, str] = {
    "pcie_aer.uncorrected_fatal": (
        "an uncorrectable fatal AER error on the GPU's PCIe path (or on a device on no GPU's "
        "path): the link failed; the GPU usually falls off the bus"
    ),
    "pcie_aer.uncorrected_nonfatal": (
        "an uncorrectable non-fatal AER error on the path: a transaction was lost, the link "
        "stayed up"
    ),
    "pcie_aer.counter_fatal": (
        "sysfs AER counters on the path count more fatal errors than the kernel log shows "
        "(the log rotated, or firmware handled them)"
    ),
    "pcie_aer.counter_nonfatal": (
        "sysfs AER counters on the path count more non-fatal errors than the kernel log shows"
    ),
    "pcie_aer.sysfs_vanished": (
        "the sysfs folder of the GPU or a port on its path disappeared while its AER counters "
        "were read (hot-unplug, fallen off the bus, a reset under way): they are unknown"
    ),
}

PCIE_LINK_CODES: dict[str, str] = {
    "pcie_link.width_degraded": (
        "the GPU's link (or a port on its path) runs narrower than both ends allow, e.g. x8 of "
        "x16: half the bandwidth; seed 000's table: Gen4 x8 ≈ 70 % of baseline TensorRT "
        "throughput"
    ),
    "pcie_link.sysfs_vanished": (
        "the sysfs folder of the GPU or a port on its path disappeared while its link was "
        "read (hot-unplug, fallen off the bus, a reset under way): the link state is unknown"
    ),
}

MEMORY_ERRORS_CODES: dict[str, str] = {
    "memory_errors.remap_pending": (
        "a memory row is marked for remapping and waits for a GPU reset to take effect"
    ),
    "memory_errors.remap_failure": (
        "row remapping failed: a failing row could not be replaced (no spare rows left)"
    ),
    "memory_errors.retired_pages_pending": (
        "a page retirement waits for a GPU reset to take effect (GPUs before row remapping)"
    ),
}

NVLINK_CODES: dict[str, str] = {
    "nvlink.link_inactive": "NVLinks of the GPU are not active (down or never trained)",
    "nvlink.errors_grew": (
        "NVLink replay or recovery counters grew during the window: links retransmitted or "
        "retrained"
    ),
}

TOPOLOGY_CODES: dict[str, str] = {
    "topology.unparsable": "nvidia-smi topo -m printed no matrix (an error text instead)",
    "topology.gpu_missing": "a GPU the driver lists is missing from the topology matrix",
    "topology.asymmetric": "the matrix reads one link kind a→b and another b→a",
    "topology.nvml_disagrees": (
        "the matrix and NVML disagree on a pair's NVLink P2P, common PCIe ancestor or active "
        "link count, or on which GPUs exist"
    ),
}

TENSORRT_CODES: dict[str, str] = {
    "tensorrt.engine_mismatch": (
        "the engine was built on another GPU model or compute capability than the GPU it "
        "applies to: a TensorRT plan runs only where it was built"
    ),
    "tensorrt.built_on_inconsistent": (
        "the log names one GPU (an A100, sm_80) and reports another compute capability "
        "(SM_86): the engine is built or run for a different GPU than it names"
    ),
    "tensorrt.fallback": "layers or tactics fell back to a slower path (no Tensor Core kernel)",
    "tensorrt.precision_fallback": "layers were kept at a higher precision than asked",
    "tensorrt.build_failed": "the TensorRT build failed: errors and no engine",
    "tensorrt.build_errors": "the build finished but logged errors",
    "tensorrt.probe_failed": "the probe could not build a one-layer network on the GPU",
}

CODES: dict[str, str] = {
    **DRIVER_CODES,
    **PCIE_AER_CODES,
    **PCIE_LINK_CODES,
    **MEMORY_ERRORS_CODES,
    **NVLINK_CODES,
    **TOPOLOGY_CODES,
    **TENSORRT_CODES,
}

SEVERITY: dict[str, str] = {
    **dict.fromkeys(
        (
            "driver.absent",
            "driver.not_loaded",
            "driver.gpu_lost",
            "driver.reset_required",
            "driver.error",
            "driver.timeout",
            "driver.no_permission",
            "driver.not_supported",
            "driver.gpu_count",
            "driver.count_mismatch",
        ),
        "critical",
    ),
    "driver.persistence_mode_off": "warning",
    "driver.recovery_action": "critical (warning for drain P2P)",
    "driver.vbios_mismatch": "warning",
    "pcie_aer.uncorrected_fatal": "critical",
    "pcie_aer.uncorrected_nonfatal": "warning",
    "pcie_aer.counter_fatal": "critical",
    "pcie_aer.counter_nonfatal": "warning",
    "pcie_link.width_degraded": "warning",
    "pcie_link.sysfs_vanished": "unknown",
    "pcie_aer.sysfs_vanished": "unknown",
    "memory_errors.remap_pending": "warning",
    "memory_errors.remap_failure": "critical",
    "memory_errors.retired_pages_pending": "warning",
    "nvlink.link_inactive": "critical",
    "nvlink.errors_grew": "critical",
    "topology.unparsable": "unknown",
    "topology.gpu_missing": "critical",
    "topology.asymmetric": "warning",
    "topology.nvml_disagrees": "warning",
    "tensorrt.engine_mismatch": "critical",
    "tensorrt.built_on_inconsistent": "warning",
    "tensorrt.fallback": "warning",
    "tensorrt.precision_fallback": "warning",
    "tensorrt.build_failed": "critical",
    "tensorrt.build_errors": "warning",
    "tensorrt.probe_failed": "critical",
}

_RESET_OR_REBOOT = (
    "reset the GPU (nvidia-smi -r) or reboot the node; if it recurs, inspect hardware"
)

_VANISHED_ACTION = (
    "run `lspci -s <bus id>` and read the kernel log (pcie_aer, xid: fallen off the bus, Xid "
    "79, surprise link down); if the device is gone, drain the node and reseat or replace it; "
    "if it is back, rerun sitscheck"
)
ACTION: dict[str, str] = {
    "driver.absent": "install the NVIDIA driver, or run without GPU checks on a CPU node",
    "driver.not_loaded": "load the NVIDIA kernel module (modprobe nvidia) or reinstall it",
    "driver.gpu_lost": _RESET_OR_REBOOT + " (kernel log: Xid 79, AER on its path)",
    "driver.reset_required": _RESET_OR_REBOOT,
    "driver.error": _RESET_OR_REBOOT,
    "driver.timeout": _RESET_OR_REBOOT,
    "driver.no_permission": "run sitscheck with access to /dev/nvidia* (root or the video group)",
    "driver.not_supported": "check the driver supports this GPU (nvidia-smi -q)",
    "driver.gpu_count": "find the missing GPU (nvidia-smi -L, lspci, kernel log); reseat or RMA",
    "driver.count_mismatch": (
        "a GPU is dropping in and out: check the kernel log for Xid 79 and AER"
    ),
    "driver.persistence_mode_off": (
        "run nvidia-persistenced (systemctl enable --now nvidia-persistenced)"
    ),
    "driver.recovery_action": (
        "do what the driver asks: drain and reset the GPU, reboot the node, or drain P2P traffic"
    ),
    "driver.vbios_mismatch": "flash all GPUs to the same VBIOS during the next maintenance window",
    "pcie_aer.uncorrected_fatal": (
        "drain the node; reseat/inspect the GPU, riser and cable on this path; if it recurs, "
        "replace the failing part"
    ),
    "pcie_aer.uncorrected_nonfatal": (
        "watch for recurrence; inspect the link (riser, cable, slot) if it repeats"
    ),
    "pcie_aer.counter_fatal": (
        "inspect the link on this path (riser, cable, slot); check the BMC log"
    ),
    "pcie_aer.counter_nonfatal": (
        "inspect the link on this path (riser, cable, slot); check the BMC log"
    ),
    "pcie_link.width_degraded": (
        "reseat the GPU (and its riser or cable) and check the slot; look for AER errors on "
        "the upstream port; if the link stays narrow, replace the riser or RMA the GPU"
    ),
    "pcie_link.sysfs_vanished": _VANISHED_ACTION,
    "pcie_aer.sysfs_vanished": _VANISHED_ACTION,
    "memory_errors.remap_pending": (
        "drain the GPU and reset it so the remap takes effect; healthy once nothing is pending"
    ),
    "memory_errors.remap_failure": (
        "take the GPU out of service; open a hardware inspection/RMA with the remap counters "
        "and the kernel log's Xid 63/64 lines"
    ),
    "memory_errors.retired_pages_pending": (
        "drain the GPU and reset it so the retirement takes effect"
    ),
    "nvlink.link_inactive": (
        "check the NVLink/NVSwitch fabric (nvidia-smi nvlink -s, fabric manager log, Xid 74); "
        "reset the GPU or reboot; if the link stays down, inspect the baseboard"
    ),
    "nvlink.errors_grew": (
        "drain the GPU, watch the counters under load (nvidia-smi nvlink -e), reset the GPU; "
        "if they grow again, inspect the baseboard"
    ),
    "topology.unparsable": (
        "run nvidia-smi topo -m by hand: an error text means the driver did not answer"
    ),
    "topology.gpu_missing": (
        "check the kernel log for Xid 79/AER on the GPU's bus, nvidia-smi -q -i N; reset or "
        "reseat the GPU"
    ),
    "topology.asymmetric": (
        "run nvidia-smi nvlink -s on both GPUs, reset them or reboot; if it persists, drain "
        "the node for hardware inspection"
    ),
    "topology.nvml_disagrees": (
        "rerun; check nvidia-smi nvlink -s, nvidia-smi -q | grep -A2 Fabric and the fabric "
        "manager log"
    ),
    "tensorrt.engine_mismatch": "rebuild the engine on this node's GPU model and deploy it",
    "tensorrt.built_on_inconsistent": (
        "find out which GPU the engine really targets; build it on the GPU model that runs it"
    ),
    "tensorrt.fallback": (
        "give the builder enough workspace, use ops and precisions this GPU supports, build on "
        "the GPU model that runs the engine; then compare SM utilisation under load"
    ),
    "tensorrt.precision_fallback": (
        "calibrate or set dynamic ranges for the named tensors (INT8), or enable the precision "
        "the layer needs"
    ),
    "tensorrt.build_failed": "fix the first error the log names, then rebuild the engine",
    "tensorrt.build_errors": "read the errors: the engine may lack what they name; rebuild",
    "tensorrt.probe_failed": (
        "check the CUDA/TensorRT install against the driver, then the GPU (Xids, nvidia-smi -q)"
    ),
}


def check_of(code: str) -> str:
    """The check a finding code belongs to: the part before the first dot."""
    return code.split(".", 1)[0]
