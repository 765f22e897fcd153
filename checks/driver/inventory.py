"""Pure: the GPU inventory from whichever evidence exists, and what it says by itself."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from sitscheck.models import Device, Evidence, Finding, Severity
from sitscheck.smi.list_gpus import GpuList
from sitscheck.smi.query_csv import field_bool, field_int, field_str
from sitscheck.smi.values import SmiParseError, Value

# NVML_FI_DEV_GET_GPU_RECOVERY_ACTION values (nvmlDeviceGpuRecoveryAction_t), named as
# nvidia-smi prints them in `gpu_recovery_action` (lower case, spaces as underscores).
RECOVERY_ACTIONS = {0: "none", 1: "reset", 2: "reboot", 3: "drain_p2p", 4: "drain_and_reset"}
RECOVERY_ADVICE = {
    "reset": (Severity.CRITICAL, "drain the GPU and reset it (nvidia-smi -r)"),
    "reboot": (Severity.CRITICAL, "drain the node and reboot it"),
    "drain_p2p": (
        Severity.WARNING,
        "stop peer-to-peer (NVLink) traffic on the GPU: drain its jobs until the driver clears it",
    ),
    "drain_and_reset": (Severity.CRITICAL, "drain the GPU's jobs, then reset the GPU"),
}


@dataclass(frozen=True, slots=True)
class GpuEntry:
    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    pci_device_id: str | None = None
    vbios: str | None = None
    persistence_mode: bool | None = None
    recovery_action: str | None = None
    state: str = "ok"
    detail: str | None = None

    def device(self) -> Device:
        return Device(index=self.index, pci_bus_id=self.pci_bus_id, name=self.name)


@dataclass(frozen=True)
class Inventory:
    source: str
    ref: str
    gpus: list[GpuEntry]
    driver_version: str | None = None
    cuda_driver_version: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_fact(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "driver_version": self.driver_version,
            "cuda_driver_version": self.cuda_driver_version,
            "gpu_count": len(self.gpus),
            "gpus": [asdict(g) for g in self.gpus],
            **self.extra,
        }


def from_snapshot(snapshot: dict[str, Any], ref: str) -> Inventory:
    gpus: list[GpuEntry] = []
    for raw in snapshot.get("gpus") or []:
        lost = raw.get("lost") or {}
        gpus.append(
            GpuEntry(
                index=int(raw.get("index", len(gpus))),
                name=raw.get("name"),
                uuid=raw.get("uuid"),
                pci_bus_id=raw.get("pci_bus_id"),
                pci_device_id=raw.get("pci_device_id"),
                vbios=raw.get("vbios"),
                persistence_mode=raw.get("persistence_mode"),
                recovery_action=_recovery_name(raw.get("recovery_action")),
                state=str(lost.get("state", "ok")),
                detail=lost.get("detail"),
            )
        )
    return Inventory(
        "nvml",
        ref,
        gpus,
        snapshot.get("driver_version"),
        snapshot.get("cuda_driver_version"),
    )


def from_list(listing: GpuList, ref: str) -> Inventory:
    gpus = [GpuEntry(index=g.index, name=g.name, uuid=g.uuid) for g in listing.gpus]
    for error in listing.lost:
        index = error.gpu_index if error.gpu_index is not None else -1
        gpus.append(
            GpuEntry(
                index=index, pci_bus_id=_bus(error.bus_id), state="gpu_lost", detail=error.message
            )
        )
    return Inventory("nvidia-smi -L", ref, sorted(gpus, key=lambda g: g.index))


def from_query_rows(rows: list[dict[str, Value]], ref: str) -> Inventory:
    """GPUs from CSV query rows; any field may be missing (an operator's own field list)."""
    gpus: list[GpuEntry] = []
    for position, row in enumerate(rows):
        index = _optional(row, "index", field_int)
        gpus.append(
            GpuEntry(
                index=position if index is None else index,
                name=_optional(row, "name", field_str),
                uuid=_optional(row, "uuid", field_str),
                pci_bus_id=_bus(_optional(row, "pci.bus_id", field_str)),
                vbios=_optional(row, "vbios_version", field_str),
                persistence_mode=_optional(row, "persistence_mode", field_bool),
                recovery_action=_recovery_name(_optional(row, "gpu_recovery_action", field_str)),
            )
        )
    versions = (_optional(r, "driver_version", field_str) for r in rows)
    driver = next((v for v in versions if v), None)
    return Inventory("nvidia-smi --query-gpu", ref, gpus, driver)


def _optional(row: dict[str, Value], name: str, read: Any) -> Any:
    """A field the CSV may not have queried, or may print in a form not understood: None."""
    try:
        return read(row, name)
    except (KeyError, SmiParseError):
        return None


def _recovery_name(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return RECOVERY_ACTIONS.get(value, f"unknown ({value})")
    if isinstance(value, str) and value.strip():
        return "_".join(value.strip().lower().split())
    return None


def _bus(text: str | None) -> str | None:
    if not text:
        return None
    from sitscheck.sources.nvml_record import normalise_bus_id

    return normalise_bus_id(text)


def judge(inventory: Inventory, expect_gpus: int | None) -> list[Finding]:
    findings: list[Finding] = []
    evidence = [Evidence(source=inventory.source, ref=inventory.ref)]
    present = [g for g in inventory.gpus if g.state == "ok"]
    if expect_gpus is not None and len(present) != expect_gpus:
        findings.append(
            Finding(
                code="driver.gpu_count",
                severity=Severity.CRITICAL,
                message=f"{len(present)} GPUs answer, {expect_gpus} expected",
                evidence=evidence,
                action="find the missing GPU (nvidia-smi -L, lspci, kernel log); reseat or RMA",
            )
        )
    for gpu in inventory.gpus:
        if gpu.state != "ok":
            findings.append(
                Finding(
                    code=f"driver.{gpu.state}",
                    severity=Severity.CRITICAL,
                    message=(
                        f"GPU {gpu.index} is listed but does not answer ({gpu.state}): "
                        f"{gpu.detail or ''}"
                    ).strip(),
                    device=gpu.device(),
                    evidence=evidence,
                    action=(
                        "reset the GPU (nvidia-smi -r) or reboot the node; "
                        "if it recurs, inspect hardware"
                    ),
                )
            )
        else:
            findings.extend(_gpu_state(gpu, evidence))
    findings.extend(_version_spread(inventory, evidence))
    return findings


def unjudged(inventory: Inventory) -> list[str]:
    """What could not be judged per answering GPU: persistence mode, the recovery action."""
    notes: list[str] = []
    for gpu in inventory.gpus:
        if gpu.state != "ok":
            continue
        if gpu.persistence_mode is None:
            notes.append(f"GPU {gpu.index}: persistence mode: not in {inventory.source} output")
        if gpu.recovery_action is None:
            notes.append(f"GPU {gpu.index}: recovery action: not in {inventory.source} output")
    return notes


def _gpu_state(gpu: GpuEntry, evidence: list[Evidence]) -> list[Finding]:
    """Persistence mode and the driver's recovery action of a GPU that answers."""
    findings: list[Finding] = []
    if gpu.persistence_mode is False:
        findings.append(
            Finding(
                code="driver.persistence_mode_off",
                severity=Severity.WARNING,
                message=(
                    f"GPU {gpu.index}: persistence mode is off: the driver tears the GPU down "
                    "when no client holds it, so each job pays the start-up latency"
                ),
                device=gpu.device(),
                evidence=evidence,
                action="run nvidia-persistenced (systemctl enable --now nvidia-persistenced)",
            )
        )
    action = gpu.recovery_action
    if action is not None and action != "none":
        severity, advice = RECOVERY_ADVICE.get(
            action, (Severity.CRITICAL, "follow the driver's recovery action for this GPU")
        )
        findings.append(
            Finding(
                code="driver.recovery_action",
                severity=severity,
                message=f"GPU {gpu.index}: the driver asks for recovery action '{action}'",
                device=gpu.device(),
                evidence=evidence,
                action=advice,
            )
        )
    return findings


def _version_spread(inventory: Inventory, evidence: list[Evidence]) -> list[Finding]:
    by_model: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for gpu in inventory.gpus:
        if gpu.vbios and gpu.name:
            by_model[gpu.name][gpu.vbios].append(gpu.index)
    findings = []
    for model, versions in sorted(by_model.items()):
        if len(versions) > 1:
            spread = "; ".join(
                f"{v} on GPU {', '.join(map(str, ix))}" for v, ix in sorted(versions.items())
            )
            findings.append(
                Finding(
                    code="driver.vbios_mismatch",
                    severity=Severity.WARNING,
                    message=f"{model}: VBIOS differs across GPUs ({spread})",
                    evidence=evidence,
                    action="flash all GPUs to the same VBIOS during the next maintenance window",
                )
            )
    return findings
