"""The `xid` check's finding codes: `xid.N` and `sxid.N`, one per code of the Xid catalog.

The catalog (`catalog.py`) is the table: its entries are served as `CodeSpec`s, so findings,
`sitscheck explain` and the docs read one source. Spellings an operator types (`Xid 79`,
`xid79`, `79`, `SXid 12028`) name the same codes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from sitscheck.contract import ActionCategory, CodeSpec, FindingKind, Severity

from .catalog import Action, XidInfo, catalog, lookup_sxid, lookup_xid

ACTION_TEXT: dict[str, str] = {
    "none": "no action needed by itself",
    "restart_app": "restart the application",
    "check_application": "check the application (a bug or bad input in the workload)",
    "reset_gpu": "drain the GPU's work and reset it (nvidia-smi -r)",
    "drain_and_reset": "drain the node's work, then reset the GPU",
    "drain_p2p": "drain peer-to-peer traffic, then reset the GPU",
    "reboot_node": "drain and reboot the node",
    "inspect_hardware": "drain the node, inspect the GPU, riser and power; RMA if it recurs",
    "check_nvlink_fabric": "check NVLink and the fabric manager (nvidia-smi nvlink -s, FM log)",
    "restart_fabric_manager": "restart the fabric manager (and reset the NVSwitch/GPUs it names)",
    "update_software": "update the driver/firmware to a release that fixes it",
    "inspect": "look up the code in NVIDIA's Xid catalog and inspect the GPU",
}

CATEGORY: dict[Action, ActionCategory] = {
    "none": ActionCategory.NONE,
    "restart_app": ActionCategory.TRIAGE,
    "check_application": ActionCategory.TRIAGE,
    "reset_gpu": ActionCategory.RESET_GPU,
    "drain_and_reset": ActionCategory.RESET_GPU,
    "drain_p2p": ActionCategory.RESET_GPU,
    "reboot_node": ActionCategory.REBOOT,
    "inspect_hardware": ActionCategory.ISOLATE,
    "check_nvlink_fabric": ActionCategory.TRIAGE,
    "restart_fabric_manager": ActionCategory.TRIAGE,
    "update_software": ActionCategory.CONFIGURE,
    "inspect": ActionCategory.TRIAGE,
}

_SEVERITY = {"info": Severity.INFO, "warning": Severity.WARNING, "critical": Severity.CRITICAL}
_SPELLING = re.compile(r"^(?P<kind>s?xid)?[\s._:-]*(?P<number>\d+)$")


def spec_of(info: XidInfo) -> CodeSpec:
    action = ACTION_TEXT.get(info.action, info.action)
    if info.followup is not None:
        action += "; then, if it persists: " + ACTION_TEXT.get(info.followup, info.followup)
    variable = info.kind == "xid" and (info.code == 154 or 144 <= info.code <= 150)
    meaning = info.meaning + ("" if info.known else " (check NVIDIA's Xid catalog)")
    if info.kind == "sxid":
        meaning += "; reported by an NVSwitch: the line names the switch, not a GPU"
    if info.sympathetic:
        meaning += "; often logged as a consequence of another error: correlate first"
    return CodeSpec(
        code=f"{info.kind}.{info.code}",
        severity=_SEVERITY[info.severity],
        meaning=meaning,
        action=action,
        kind=FindingKind.EVENT,
        category=CATEGORY[info.action],
        severity_note="depends on the message" if variable else "",
        name=f"{'SXid' if info.kind == 'sxid' else 'Xid'} {info.code} ({info.name})",
    )


class XidCodes:
    """The catalog as a code table: every number answers (unknown ones: warning, inspect)."""

    def get(self, code: str) -> CodeSpec | None:
        kind, _, number = code.partition(".")
        if not number.isdigit():
            return None
        if kind == "xid":
            return spec_of(lookup_xid(int(number)))
        if kind == "sxid":
            return spec_of(lookup_sxid(int(number)))
        return None

    def __iter__(self) -> Iterator[CodeSpec]:
        return (spec_of(info) for info in catalog())

    def normalise(self, text: str) -> str | None:
        match = _SPELLING.match(text.strip().lower())
        if match is None:
            return None
        return f"{match.group('kind') or 'xid'}.{int(match.group('number'))}"


CODES = XidCodes()
