"""The `driver` check's finding codes: severity, meaning, action and kind, written once."""

from __future__ import annotations

from sitscheck.contract import ActionCategory, Codes, CodeSpec, FindingKind, Severity

CODES = Codes(
    [
        CodeSpec(
            "driver.absent",
            Severity.CRITICAL,
            (
                "no NVIDIA driver on the node (no /proc/driver/nvidia, no device nodes, no "
                "nvidia-smi) and no NVIDIA GPU on its PCI bus, while --expect-gpus says it must "
                "have GPUs"
            ),
            "install the NVIDIA driver, or run without GPU checks on a CPU node",
            FindingKind.CONDITION,
            ActionCategory.CONFIGURE,
        ),
        CodeSpec(
            "driver.not_loaded",
            Severity.CRITICAL,
            (
                "the NVIDIA kernel module is not loaded (not installed, failed to load, or not "
                "visible where sitscheck runs): nothing can use the GPUs"
            ),
            (
                "load the NVIDIA kernel module (modprobe nvidia) or reinstall the driver; in a "
                "container, check the driver mounts (/dev/nvidia*, NVIDIA Container Toolkit)"
            ),
            FindingKind.CONDITION,
            ActionCategory.CONFIGURE,
        ),
        CodeSpec(
            "driver.version_mismatch",
            Severity.CRITICAL,
            (
                "the driver's user-space libraries (NVML, nvidia-smi, CUDA) and its loaded "
                "kernel module are different versions (the driver was upgraded without a reboot, "
                "or a container carries another driver's libraries): nothing can use the GPUs"
            ),
            (
                "drain the node and reboot it, so that the kernel module loaded matches the "
                "libraries installed (or unload and reload the nvidia modules once no process "
                "holds them); in a container, mount the host's driver libraries"
            ),
            FindingKind.CONDITION,
            ActionCategory.REBOOT,
        ),
        CodeSpec(
            "driver.library_missing",
            Severity.CRITICAL,
            (
                "NVML's library (libnvidia-ml.so.1) cannot be found: the driver's user space is "
                "missing or incomplete where sitscheck runs (a container whose driver mount is "
                "wrong): nothing there can use the GPUs"
            ),
            (
                "install the driver's user-space libraries, or mount them into the container "
                "(NVIDIA Container Toolkit, NVIDIA_DRIVER_CAPABILITIES=utility,compute)"
            ),
            FindingKind.CONDITION,
            ActionCategory.CONFIGURE,
        ),
        CodeSpec(
            "driver.nvidia_smi_unavailable",
            Severity.INFO,
            (
                "nvidia-smi cannot run where sitscheck runs (not installed, or its library is "
                "missing) while NVML serves every GPU: the GPUs are judged from NVML alone, "
                "without nvidia-smi's cross-check of the GPU count or its topology matrix"
            ),
            (
                "nothing for the GPUs; install nvidia-smi (in a container: "
                "NVIDIA_DRIVER_CAPABILITIES=utility) for the operators' tools and topo -m"
            ),
            FindingKind.CONDITION,
            ActionCategory.NONE,
        ),
        CodeSpec(
            "driver.gpu_lost",
            Severity.CRITICAL,
            (
                "the driver lists the GPU but it does not answer: NVML reports it lost (it fell"
                " off the bus, usually after Xid 79)"
            ),
            (
                "reset the GPU (nvidia-smi -r) or reboot the node; if it recurs, inspect "
                "hardware (kernel log: Xid 79, AER on its path)"
            ),
            FindingKind.CONDITION,
            ActionCategory.RESET_GPU,
        ),
        CodeSpec(
            "driver.reset_required",
            Severity.CRITICAL,
            "the GPU does not answer until it is reset (NVML: reset required)",
            ("reset the GPU (nvidia-smi -r) or reboot the node; if it recurs, inspect hardware"),
            FindingKind.CONDITION,
            ActionCategory.RESET_GPU,
        ),
        CodeSpec(
            "driver.error",
            Severity.CRITICAL,
            "NVML could not open the GPU (a handle error other than lost or reset)",
            ("reset the GPU (nvidia-smi -r) or reboot the node; if it recurs, inspect hardware"),
            FindingKind.CONDITION,
            ActionCategory.RESET_GPU,
        ),
        CodeSpec(
            "driver.timeout",
            Severity.CRITICAL,
            "opening the GPU through NVML ran past its deadline (a hung driver call)",
            ("reset the GPU (nvidia-smi -r) or reboot the node; if it recurs, inspect hardware"),
            FindingKind.CONDITION,
            ActionCategory.RESET_GPU,
        ),
        CodeSpec(
            "driver.no_permission",
            Severity.CRITICAL,
            "NVML was not allowed to open the GPU (permissions, cgroup)",
            "run sitscheck with access to /dev/nvidia* (root or the video group)",
            FindingKind.CONDITION,
            ActionCategory.CONFIGURE,
        ),
        CodeSpec(
            "driver.not_supported",
            Severity.CRITICAL,
            "NVML does not support opening this GPU",
            "check the driver supports this GPU (nvidia-smi -q)",
            FindingKind.CONDITION,
            ActionCategory.TRIAGE,
        ),
        CodeSpec(
            "driver.gpu_count",
            Severity.CRITICAL,
            "fewer (or more) GPUs answer than the node must have (--expect-gpus)",
            "find the missing GPU (nvidia-smi -L, lspci, kernel log); reseat or RMA",
            FindingKind.CONDITION,
            ActionCategory.ISOLATE,
        ),
        CodeSpec(
            "driver.count_mismatch",
            Severity.CRITICAL,
            (
                "sources that each list every GPU (NVML, nvidia-smi -L, --query-gpu, -q) list "
                "different numbers of GPUs: a GPU drops in and out"
            ),
            "a GPU is dropping in and out: check the kernel log for Xid 79 and AER",
            FindingKind.CONDITION,
            ActionCategory.TRIAGE,
        ),
        CodeSpec(
            "driver.persistence_mode_off",
            Severity.WARNING,
            (
                "persistence mode is off: the driver tears the GPU down between clients and "
                "every job pays the initialisation latency"
            ),
            "run nvidia-persistenced (systemctl enable --now nvidia-persistenced)",
            FindingKind.CONDITION,
            ActionCategory.CONFIGURE,
        ),
        CodeSpec(
            "driver.recovery_action",
            Severity.CRITICAL,
            (
                "the driver asks for a recovery action on the GPU (reset, reboot, drain P2P, "
                "drain and reset) after an error it could not contain"
            ),
            (
                "do what the driver asks: drain and reset the GPU, reboot the node, or drain "
                "P2P traffic"
            ),
            FindingKind.CONDITION,
            ActionCategory.RESET_GPU,
            severity_note="warning for drain P2P",
        ),
        CodeSpec(
            "driver.vbios_mismatch",
            Severity.WARNING,
            (
                "GPUs of the same model run different VBIOS versions (seed 003 §4.4: cold-start"
                " latency variance followed firmware)"
            ),
            "flash all GPUs to the same VBIOS during the next maintenance window",
            FindingKind.CONDITION,
            ActionCategory.CONFIGURE,
        ),
        CodeSpec(
            "driver.sources_disagree",
            Severity.WARNING,
            (
                "two sources (NVML, nvidia-smi -L, --query-gpu, -q) read different values of "
                "something that cannot change between readings (identity, VBIOS, driver version, "
                "limits, thresholds, modes), or one finds a GPU lost that another reads"
            ),
            (
                "read the GPU again (nvidia-smi -q -i N): one output is stale, from another "
                "node, or the GPU changed under it (reset, firmware flash, power cap)"
            ),
            FindingKind.CONDITION,
            ActionCategory.TRIAGE,
        ),
    ]
)
