"""Pure: the GPU inventory from whichever evidence exists, and what it says by itself."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

from sitscheck.models import Device, Evidence, Finding, Severity
from sitscheck.smi.list_gpus import GpuList
from sitscheck.smi.query_csv import field_int, field_str
from sitscheck.smi.values import Value


@dataclass(frozen=True, slots=True)
class GpuEntry:
    index: int
    name: str | None = None
    uuid: str | None = None
    pci_bus_id: str | None = None
    pci_device_id: str | None = None
    vbios: str | None = None
    persistence_mode: bool | None = None
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
    gpus: list[GpuEntry] = []
    for position, row in enumerate(rows):
        index = field_int(row, "index")
        gpus.append(
            GpuEntry(
                index=position if index is None else index,
                name=field_str(row, "name"),
                uuid=field_str(row, "uuid"),
                pci_bus_id=_bus(field_str(row, "pci.bus_id")),
                vbios=field_str(row, "vbios_version"),
            )
        )
    driver = next(
        (field_str(r, "driver_version") for r in rows if field_str(r, "driver_version")), None
    )
    return Inventory("nvidia-smi --query-gpu", ref, gpus, driver)


def _bus(text: str | None) -> str | None:
    if not text:
        return None
    from sitscheck.sources.gpu_snapshot import normalise_bus_id

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
    findings.extend(_version_spread(inventory, evidence))
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
