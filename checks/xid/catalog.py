"""What an Xid / SXid means and what an operator should do about it.

Condensed from NVIDIA's public catalogs: the Xid catalog for Ampere and newer GPUs ("Analyzing
Xid Errors with the Xid Catalog", docs.nvidia.com/deploy/xid-errors; its Immediate and
Investigatory "Resolution Buckets" are mapped onto `Action`) and the Fabric Manager user guide's
NVSwitch SXid tables (DU-09883-001, appendix D: non-fatal, potentially fatal, always fatal).

`severity` is an operations judgement for a GPU inference node: `critical` means the GPU (or
node) cannot be trusted with new work until the action is taken; `warning` means the workload
was hurt or hardware shows wear; `info` needs no action by itself. `sympathetic` marks codes that
are usually logged as a consequence of another error (Xid 45 after a fault elsewhere, Xid 74 on
the peer of a failing GPU, 94/95 alongside the DBE that caused them): correlate before acting.

Pure data and lookups: no I/O.
"""

from __future__ import annotations

import re
from typing import Literal

from msgspec import Struct
from sitscheck.contract import unique_index

__all__ = [
    "Action",
    "Severity",
    "XidInfo",
    "assess_xid",
    "catalog",
    "lookup_sxid",
    "lookup_xid",
    "recovery_action_from_message",
    "recovery_label_from_message",
]

Severity = Literal["info", "warning", "critical"]
Action = Literal[
    "none",
    "restart_app",
    "check_application",
    "reset_gpu",
    "drain_and_reset",
    "drain_p2p",
    "reboot_node",
    "inspect_hardware",
    "check_nvlink_fabric",
    "restart_fabric_manager",
    "update_software",
    "inspect",
]


class XidInfo(Struct, frozen=True):
    """Catalog entry for one Xid or SXid code."""

    code: int
    kind: Literal["xid", "sxid"]
    name: str
    meaning: str
    severity: Severity
    action: Action
    sympathetic: bool = False
    followup: Action | None = None
    known: bool = True


def _x(
    code: int,
    name: str,
    meaning: str,
    severity: Severity,
    action: Action,
    *,
    sympathetic: bool = False,
    followup: Action | None = None,
) -> XidInfo:
    return XidInfo(code, "xid", name, meaning, severity, action, sympathetic, followup)


def _s(code: int, name: str, meaning: str, severity: Severity, action: Action) -> XidInfo:
    return XidInfo(code, "sxid", name, meaning, severity, action)


_XIDS: tuple[XidInfo, ...] = (
    _x(
        8,
        "FIFO_ERROR_IDLE_TIMEOUT",
        "GPU stopped processing",
        "warning",
        "restart_app",
        followup="inspect",
    ),
    _x(
        11,
        "GR_ERROR_MISSING_HW",
        "invalid or corrupted push buffer stream",
        "warning",
        "restart_app",
        followup="check_application",
    ),
    _x(
        13,
        "GR_EXCEPTION",
        "graphics engine exception (usually an application fault: illegal "
        "instruction or address, out-of-range access)",
        "warning",
        "restart_app",
        followup="check_application",
    ),
    _x(
        25,
        "GR_ILLEGAL_NOTIFY",
        "invalid or illegal push buffer stream",
        "warning",
        "restart_app",
        followup="check_application",
    ),
    _x(
        31,
        "FIFO_ERROR_MMU_ERR_FLT",
        "GPU memory page fault (application touched an unmapped address, or a driver bug)",
        "warning",
        "restart_app",
        followup="check_application",
    ),
    _x(
        32,
        "PBDMA_ERROR",
        "invalid or corrupted push buffer stream (PBDMA)",
        "warning",
        "restart_app",
        followup="check_application",
    ),
    _x(
        37,
        "FECS_ERR_UNIMP_FIRMWARE_METHOD",
        "driver firmware error",
        "info",
        "none",
        followup="check_application",
    ),
    _x(
        38,
        "FECS_ERR_WATCHDOG_TIMEOUT",
        "driver firmware watchdog timeout",
        "info",
        "none",
        followup="inspect",
    ),
    _x(39, "CE0_ERROR", "copy engine exception", "warning", "restart_app"),
    _x(40, "CE1_ERROR", "copy engine exception", "warning", "restart_app"),
    _x(41, "CE2_ERROR", "copy engine exception", "warning", "restart_app"),
    _x(
        43,
        "RESETCHANNEL_VERIF_ERROR",
        "GPU stopped processing on a channel (the channel was "
        "reset; usually the end of an application fault)",
        "info",
        "none",
        followup="check_application",
    ),
    _x(
        44,
        "GR_FAULT_DURING_CTXSW",
        "graphics engine fault during context switch",
        "warning",
        "none",
        followup="inspect",
    ),
    _x(
        45,
        "PREEMPTIVE_REMOVAL",
        "preemptive cleanup of channels after a previous error "
        "(process killed, or another Xid on this GPU)",
        "info",
        "none",
        sympathetic=True,
        followup="restart_fabric_manager",
    ),
    _x(
        46,
        "GPU_TIMEOUT_ERROR",
        "GPU stopped processing",
        "critical",
        "reset_gpu",
        followup="inspect",
    ),
    _x(
        48,
        "GPU_ECC_DBE",
        "double bit (uncorrectable) ECC error in GPU memory",
        "critical",
        "reset_gpu",
        followup="inspect_hardware",
    ),
    _x(
        54,
        "PWR_REDUCED_CLOCKING",
        "auxiliary power is not connected to the GPU board",
        "critical",
        "inspect_hardware",
    ),
    _x(60, "SEC2_ERROR", "video processor (SEC2) exception", "warning", "restart_app"),
    _x(
        62,
        "PMU_HALT_ERROR",
        "internal micro-controller halt",
        "critical",
        "reset_gpu",
        followup="inspect",
    ),
    _x(
        63,
        "DRAM_RETIREMENT_EVENT",
        "row remapping / page retirement recorded; takes effect at the next GPU reset",
        "warning",
        "reset_gpu",
    ),
    _x(
        64,
        "DRAM_RETIREMENT_FAILURE",
        "row remapping / page retirement failed: memory can no longer be repaired",
        "critical",
        "reset_gpu",
        followup="inspect_hardware",
    ),
    _x(
        66,
        "FECS_ERR_REG_ACCESS_VIOLATION",
        "illegal register access by driver",
        "info",
        "none",
        followup="update_software",
    ),
    _x(68, "NVDEC0_ERROR", "video decoder exception", "warning", "restart_app"),
    _x(
        69,
        "GR_CLASS_ERROR",
        "graphics engine class error",
        "warning",
        "restart_app",
        followup="check_application",
    ),
    _x(
        74,
        "NVLINK_ERROR",
        "NVLink error (on a link peer of a failing GPU it is a consequence)",
        "critical",
        "check_nvlink_fabric",
        sympathetic=True,
        followup="reset_gpu",
    ),
    _x(78, "VGPU_START_ERROR", "vGPU start error", "warning", "update_software"),
    _x(
        79,
        "GPU_HAS_FALLEN_OFF_THE_BUS",
        "GPU has fallen off the bus: it no longer answers "
        "on PCIe (power, thermals, riser/slot or board failure)",
        "critical",
        "reboot_node",
        followup="inspect_hardware",
    ),
    _x(
        80,
        "PBDMA_PUSHBUFFER_CRC_MISMATCH",
        "corrupted data sent to GPU",
        "warning",
        "restart_app",
        followup="check_application",
    ),
    _x(82, "NVJPG0_ERROR", "JPEG engine error", "warning", "restart_app"),
    _x(83, "NVDEC1_ERROR", "video decoder exception", "warning", "restart_app"),
    _x(84, "NVDEC2_ERROR", "video decoder exception", "warning", "restart_app"),
    _x(86, "OFA0_ERROR", "optical flow engine exception", "warning", "restart_app"),
    _x(
        92,
        "EXCESSIVE_SBE_INTERRUPTS",
        "high single-bit ECC error rate",
        "warning",
        "none",
        followup="inspect_hardware",
    ),
    _x(
        93,
        "INFOROM_ERASE_LIMIT_EXCEEDED",
        "InfoROM wear limit exceeded (non-fatal)",
        "warning",
        "none",
        followup="inspect_hardware",
    ),
    _x(
        94,
        "CONTAINED_ERROR",
        "contained uncorrectable memory error: only the affected application was stopped",
        "warning",
        "restart_app",
        sympathetic=True,
        followup="reset_gpu",
    ),
    _x(
        95,
        "UNCONTAINED_ERROR",
        "uncontained uncorrectable memory error: every application on the GPU is affected",
        "critical",
        "reset_gpu",
        sympathetic=True,
        followup="inspect_hardware",
    ),
    _x(
        109,
        "CTXSW_TIMEOUT_ERROR",
        "context switch timeout",
        "critical",
        "reset_gpu",
        followup="inspect",
    ),
    _x(
        110,
        "SEC_FAULT_ERROR",
        "security fault",
        "critical",
        "reset_gpu",
        followup="update_software",
    ),
    _x(
        119,
        "GSP_RPC_TIMEOUT",
        "GSP firmware did not answer an RPC in time",
        "critical",
        "reset_gpu",
        followup="update_software",
    ),
    _x(
        120,
        "GSP_ERROR",
        "GSP firmware error (task panic / exception)",
        "critical",
        "reset_gpu",
        followup="update_software",
    ),
    _x(
        121,
        "C2C_ERROR",
        "chip-to-chip (C2C) link error",
        "warning",
        "none",
        followup="inspect_hardware",
    ),
    _x(
        136,
        "ALI_TRAINING_FAIL",
        "NVLink link training failed",
        "critical",
        "reset_gpu",
        followup="inspect_hardware",
    ),
    _x(
        137,
        "NVLINK_PRIV_ERR",
        "NVLink privilege error",
        "warning",
        "none",
        followup="check_application",
    ),
    _x(139, "OFA1_ERROR", "optical flow engine exception", "warning", "restart_app"),
    _x(
        140,
        "UNRECOVERABLE_ECC_ERROR_ESCAPE",
        "unrecovered ECC error",
        "critical",
        "reset_gpu",
        followup="inspect_hardware",
    ),
    _x(141, "FAST_PATH_ERROR", "CUDA fast path error", "info", "none"),
    _x(
        143,
        "GPU_INIT_ERROR",
        "GPU initialization failure",
        "critical",
        "reset_gpu",
        followup="inspect_hardware",
    ),
    _x(144, "NVLINK_SAW_ERROR", "NVLink5 SAW error", "warning", "check_nvlink_fabric"),
    _x(145, "NVLINK_RLW_ERROR", "NVLink5 RLW error", "warning", "check_nvlink_fabric"),
    _x(146, "NVLINK_TLW_ERROR", "NVLink5 TLW error", "warning", "check_nvlink_fabric"),
    _x(147, "NVLINK_TREX_ERROR", "NVLink5 TREX error", "warning", "check_nvlink_fabric"),
    _x(
        148, "NVLINK_NVLPW_CTRL_ERROR", "NVLink5 NVLPW_CTRL error", "warning", "check_nvlink_fabric"
    ),
    _x(149, "NVLINK_NETIR_ERROR", "NVLink5 NETIR error", "warning", "check_nvlink_fabric"),
    _x(150, "NVLINK_MSE_ERROR", "NVLink5 MSE error", "warning", "check_nvlink_fabric"),
    _x(
        151,
        "KEY_ROTATION_ERROR",
        "confidential-computing key rotation error",
        "critical",
        "reboot_node",
    ),
    _x(
        154,
        "GPU_RECOVERY_ACTION_CHANGED",
        "the driver changed the GPU's required recovery "
        "action (see the message: None, GPU Reset Required, Node Reboot Required, Drain and "
        "Reset, Drain P2P)",
        "info",
        "none",
    ),
    _x(
        155,
        "NVLINK_SW_DEFINED_ERROR",
        "NVLink software-defined error",
        "critical",
        "reset_gpu",
        followup="inspect",
    ),
    _x(
        156,
        "RESOURCE_RETIREMENT_EVENT",
        "resource retirement recorded; takes effect at the next GPU reset",
        "warning",
        "reset_gpu",
    ),
    _x(
        157,
        "RESOURCE_RETIREMENT_FAILURE",
        "resource retirement failed",
        "warning",
        "none",
        followup="inspect_hardware",
    ),
    _x(158, "GPU_FATAL_TIMEOUT", "GPU fatal timeout", "critical", "reset_gpu", followup="inspect"),
    _x(
        159,
        "CHI_NON_DATA_ERROR",
        "CHI non-data error",
        "warning",
        "check_application",
        sympathetic=True,
    ),
    _x(160, "CHANNEL_RETIREMENT_EVENT", "channel retirement event", "info", "none"),
    _x(
        161,
        "CHANNEL_RETIREMENT_FAILURE",
        "channel retirement failure",
        "info",
        "none",
        followup="inspect",
    ),
    _x(162, "PSHC_REENGAGED", "power smoothing circuitry re-engaged", "info", "none"),
    _x(163, "PSHC_DISENGAGED", "power smoothing circuitry disengaged", "warning", "none"),
    _x(
        164,
        "PSHC_LOW_LIFETIME",
        "power smoothing circuitry low lifetime",
        "warning",
        "none",
        followup="inspect_hardware",
    ),
    _x(
        165,
        "PSHC_ZERO_LIFETIME",
        "power smoothing circuitry lifetime exhausted",
        "warning",
        "inspect_hardware",
    ),
    _x(
        166,
        "NVLINK_SECURE_CRYPTO_ERR",
        "confidential-computing traffic before the link was set up for encryption",
        "warning",
        "check_nvlink_fabric",
    ),
    _x(
        167,
        "PCIE_FATAL_TIMEOUT",
        "PCIe fatal timeout",
        "critical",
        "reset_gpu",
        followup="inspect_hardware",
    ),
    _x(
        168,
        "REDUCED_GPU_MEMORY_CAPACITY",
        "errors in the write-protected region: GPU memory capacity reduced",
        "warning",
        "inspect_hardware",
    ),
    _x(169, "SEC2_HALT_ERROR", "internal micro-controller (SEC2) halt", "critical", "reset_gpu"),
    _x(
        170,
        "NVLINK_SECURE_OTHER",
        "NVLink interrupt in confidential-computing mode",
        "warning",
        "check_nvlink_fabric",
    ),
    _x(
        171,
        "UNCORRECTABLE_DRAM_ERROR",
        "details of an Xid 48: the uncorrectable error is in DRAM",
        "critical",
        "reset_gpu",
        sympathetic=True,
        followup="inspect_hardware",
    ),
    _x(
        172,
        "UNCORRECTABLE_SRAM_ERROR",
        "details of an Xid 48: the uncorrectable error is in SRAM",
        "critical",
        "reset_gpu",
        sympathetic=True,
        followup="inspect_hardware",
    ),
)

_SBE = "single-bit ECC error corrected by the NVSwitch (no impact)"
_POTENTIALLY_FATAL = "potentially fatal NVSwitch error: NVLink traffic through the port stops"
_ALWAYS_FATAL = "always fatal NVSwitch error: the whole NVLink fabric must be reset"

_SXIDS: tuple[XidInfo, ...] = (
    *(
        _s(code, "SINGLE_BIT_ECC", _SBE, "info", "none")
        for code in (
            11012,
            11021,
            11022,
            11023,
            12021,
            12023,
            15008,
            15011,
            19049,
            19055,
            19057,
            19059,
            19062,
            19065,
            19068,
            19071,
            24001,
            24002,
            24003,
        )
    ),
    _s(
        11004,
        "INGRESS_INVALID_ACL",
        "ingress invalid ACL (fabric partition misconfigured); "
        "GPU traffic stalls and CUDA jobs abort with Xid 45",
        "warning",
        "check_nvlink_fabric",
    ),
    _s(
        12028,
        "EGRESS_NONPOSTED_PRIV_ERROR",
        "egress non-posted PRIV error; GPU traffic stalls and CUDA jobs abort with Xid 45",
        "warning",
        "restart_app",
    ),
    _s(
        19084,
        "AN1_HEARTBEAT_TIMEOUT",
        "AN1 heartbeat timeout, usually with a fatal SXid",
        "critical",
        "reset_gpu",
    ),
    _s(
        20001,
        "TX_REPLAY_ERROR",
        "NVLink TX replay: packets retransmitted, throughput may drop",
        "warning",
        "check_nvlink_fabric",
    ),
    _s(
        20012,
        "BROKEN_CONNECTION",
        "broken or inconsistent NVLink connection (or an uncoordinated shutdown)",
        "warning",
        "inspect_hardware",
    ),
    _s(22013, "MINION_LINK_DLREQ", "MINION link DLREQ interrupt (safe to ignore)", "info", "none"),
    *(
        _s(
            code,
            name,
            _POTENTIALLY_FATAL + f" ({name.lower().replace('_', ' ')})",
            "critical",
            "reset_gpu",
        )
        for code, name in (
            (11001, "INGRESS_INVALID_COMMAND"),
            (11009, "INGRESS_INVALID_VCSET"),
            (11013, "INGRESS_HEADER_DBE"),
            (11018, "INGRESS_RID_DBE"),
            (11019, "INGRESS_RLAN_DBE"),
            (11020, "INGRESS_CONTROL_PARITY"),
            (12001, "EGRESS_CROSSBAR_OVERFLOW"),
            (12002, "EGRESS_PACKET_ROUTE"),
            (12022, "EGRESS_INPUT_ECC_DBE"),
            (12024, "EGRESS_OUTPUT_ECC_DBE"),
            (12025, "EGRESS_CREDIT_OVERFLOW"),
            (12026, "EGRESS_DESTINATION_REQUEST_ID"),
            (12027, "EGRESS_DESTINATION_RESPONSE_ID"),
            (12030, "EGRESS_CONTROL_PARITY"),
            (12031, "EGRESS_CREDIT_PARITY"),
            (12032, "EGRESS_FLIT_TYPE_MISMATCH"),
            (14017, "TS_ATO_TIMEOUT"),
            (15001, "ROUTE_BUFFER_OVER_UNDERFLOW"),
            (15006, "ROUTE_TRANSDONE_OVER_UNDERFLOW"),
            (15009, "ROUTE_GLT_DBE"),
            (15010, "ROUTE_PARITY"),
            (15012, "ROUTE_INCOMING_DBE"),
            (15013, "ROUTE_CREDIT_PARITY"),
            (19047, "NCISOC_HDR_ECC_DBE"),
            (19048, "NCISOC_DAT_ECC_DBE"),
            (19054, "HDR_RAM_ECC_DBE"),
            (19056, "DAT0_RAM_ECC_DBE"),
            (19058, "DAT1_RAM_ECC_DBE"),
            (19060, "CREQ_RAM_HDR_ECC_DBE"),
            (19061, "CREQ_RAM_DAT_ECC_DBE"),
            (19063, "RESPONSE_RAM_HDR_ECC_DBE"),
            (19064, "RESPONSE_RAM_DAT_ECC_DBE"),
            (19066, "COM_RAM_HDR_ECC_DBE"),
            (19067, "COM_RAM_DAT_ECC_DBE"),
            (19069, "RSP1_RAM_HDR_ECC_DBE"),
            (19070, "RSP1_RAM_DAT_ECC_DBE"),
            (24004, "SOURCETRACK_TCEN0_CRUMBSTORE_DBE"),
            (24005, "SOURCETRACK_TCEN0_TD_CRUMBSTORE_DBE"),
            (24006, "SOURCETRACK_TCEN1_CRUMBSTORE_DBE"),
            (24007, "SOURCETRACK_TIMEOUT"),
        )
    ),
    _s(
        20034,
        "LTSSM_FAULT_UP",
        _POTENTIALLY_FATAL + " (an NVLink went down from active)",
        "critical",
        "check_nvlink_fabric",
    ),
    _s(
        22012,
        "MINION_LINK_NA",
        _POTENTIALLY_FATAL + " (MINION link NA interrupt: broken link or uncoordinated shutdown)",
        "critical",
        "check_nvlink_fabric",
    ),
    *(
        _s(
            code,
            name,
            _ALWAYS_FATAL + f" ({name.lower().replace('_', ' ')})",
            "critical",
            "reboot_node",
        )
        for code, name in (
            (12020, "EGRESS_SEQUENCE_ID"),
            (22003, "MINION_HALT"),
            (22011, "MINION_EXTERROR"),
            (23001, "INGRESS_SRC_VC_BUFFER_OVERFLOW"),
            (23002, "INGRESS_SRC_VC_BUFFER_UNDERFLOW"),
            (23003, "EGRESS_DST_VC_CREDIT_OVERFLOW"),
            (23004, "EGRESS_DST_VC_CREDIT_UNDERFLOW"),
            (23005, "INGRESS_PACKET_BURST"),
            (23006, "INGRESS_PACKET_STICKY"),
            (23007, "INGRESS_POSSIBLE_BUBBLES"),
            (23008, "INGRESS_PACKET_INVALID_DST"),
            (23009, "INGRESS_PACKET_PARITY"),
        )
    ),
)

# a code listed twice is refused at import (a dict would keep the second entry silently)
_XID_BY_CODE: dict[int, XidInfo] = unique_index(_XIDS, lambda info: info.code, "Xid catalogue")
_SXID_BY_CODE: dict[int, XidInfo] = unique_index(_SXIDS, lambda info: info.code, "SXid catalogue")

# Xid 154: "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"
_RECOVERY = re.compile(r"\bto\s+0x[0-9a-fA-F]+\s*\((?P<label>[^)]*)\)")
_RECOVERY_ACTIONS: dict[str, Action] = {
    "none": "none",
    "gpu reset required": "reset_gpu",
    "pf flr": "reset_gpu",
    "node reboot required": "reboot_node",
    "drain and reset": "drain_and_reset",
    "drain p2p": "drain_p2p",
}
_FATAL = re.compile(r"\bFatal\b")
_RECOVERY_SEVERITY: dict[Action, Severity] = {
    "none": "info",
    "drain_p2p": "warning",
    "reset_gpu": "critical",
    "drain_and_reset": "critical",
    "reboot_node": "critical",
}


def catalog() -> tuple[XidInfo, ...]:
    """Every Xid, then every SXid, the catalog knows."""
    return _XIDS + _SXIDS


def lookup_xid(code: int) -> XidInfo:
    """Catalog entry for Xid `code`; unknown codes get a safe default (warning, inspect)."""
    info = _XID_BY_CODE.get(code)
    if info is not None:
        return info
    return XidInfo(
        code,
        "xid",
        "UNKNOWN",
        f"Xid {code} is not in this catalog",
        "warning",
        "inspect",
        known=False,
    )


def lookup_sxid(code: int) -> XidInfo:
    """Catalog entry for NVSwitch SXid `code`; unknown codes: warning, inspect."""
    info = _SXID_BY_CODE.get(code)
    if info is not None:
        return info
    return XidInfo(
        code,
        "sxid",
        "UNKNOWN",
        f"SXid {code} is not in this catalog",
        "warning",
        "inspect",
        known=False,
    )


def recovery_label_from_message(message: str) -> str | None:
    """The recovery action an Xid 154 message names, as printed ("GPU Reset Required")."""
    match = _RECOVERY.search(message)
    if match is not None:
        return match.group("label").strip()
    lowered = message.lower()
    for label in sorted(_RECOVERY_ACTIONS, key=len, reverse=True):
        if label != "none" and label in lowered:
            start = lowered.index(label)
            return message[start : start + len(label)]
    return None


def recovery_action_from_message(message: str) -> str | None:
    """The `Action` an Xid 154 message asks for ("reset_gpu", "reboot_node", ...), or None."""
    return _recovery_action(message)


def assess_xid(code: int, message: str = "") -> XidInfo:
    """`lookup_xid`, refined by what this event's message says.

    Xid 154 takes its action (and severity) from the recovery action it announces; the NVLink5
    Xids 144-150 are critical when the message says the error is Fatal.
    """
    info = lookup_xid(code)
    if code == 154:
        action = _recovery_action(message)
        if action is not None:
            return _replace(info, _RECOVERY_SEVERITY.get(action, "warning"), action)
    elif 144 <= code <= 150 and _FATAL.search(message):
        return _replace(info, "critical", info.action)
    return info


def _recovery_action(message: str) -> Action | None:
    label = recovery_label_from_message(message)
    if label is None:
        return None
    return _RECOVERY_ACTIONS.get(" ".join(label.lower().split()))


def _replace(info: XidInfo, severity: Severity, action: Action) -> XidInfo:
    return XidInfo(
        info.code,
        info.kind,
        info.name,
        info.meaning,
        severity,
        action,
        info.sympathetic,
        info.followup,
        info.known,
    )
