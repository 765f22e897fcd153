"""The GPUs a report knows (the driver check's inventory) and each one's health.

Shared by the OTLP export and the Prometheus textfile; no OpenTelemetry import.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from msgspec import Struct, field
from msgspec.structs import replace

from ..models import Device, Report, Status, worst
from ..sources.nvml_record import hw_id
from .semconv import Attrs

_GPU_ID_LABELS = ("hw.id", "uuid", "gpu_uuid")
_GPU_BUS_LABELS = ("pci_bus_id", "gpu.pci_bus_id", "bus_id", "device")
_GPU_INDEX_LABELS = ("gpu.index", "gpu_index", "gpu", "index")
HW_STATES = ("ok", "degraded", "failed", "predicted_failure")
# findings that say a GPU will fail (a reset is due to take memory out of use) before it does
PREDICTED_FAILURE = ("memory_errors.remap_pending", "memory_errors.retired_pages_pending")


class Gpu(Struct, frozen=True):
    """One GPU of the driver check's inventory: its identity as reported, and its state."""

    index: int | None
    uuid: str | None
    pci_bus_id: str | None
    model: str | None
    vbios: str | None
    state: str | None = None  # the driver's word for it: ok, or why not
    pci_device_id: str | None = None  # "233510de": device and vendor id

    @property
    def hw_id(self) -> str:
        return hw_id(self.index, self.uuid, self.pci_bus_id)


class Inventory(Struct):
    """The report's GPUs and driver version, read from the driver check's facts (`of`)."""

    gpus: list[Gpu] = field(default_factory=list)
    driver_version: str | None = None

    @classmethod
    def of(cls, report: Report) -> Inventory:
        driver = report.check("driver")
        facts = driver.facts if driver is not None else {}
        gpus = []
        for raw in facts.get("gpus") or []:
            if not isinstance(raw, dict):
                continue
            index = raw.get("index")
            gpus.append(
                Gpu(
                    index=index if isinstance(index, int) else None,
                    uuid=_str(raw.get("uuid")),
                    pci_bus_id=bus_id(raw.get("pci_bus_id")),
                    model=_str(raw.get("name")),
                    vbios=_str(raw.get("vbios")),
                    state=_str(raw.get("state")),
                    pci_device_id=_str(raw.get("pci_device_id")),
                )
            )
        return cls(gpus, _str(facts.get("driver_version")))

    def find(
        self, index: int | None = None, uuid: str | None = None, bus: str | None = None
    ) -> Gpu | None:
        bus = bus_id(bus)
        for wanted, key in ((uuid, "hw_id"), (uuid, "uuid"), (bus, "pci_bus_id"), (index, "index")):
            if wanted is None:
                continue
            found = next((g for g in self.gpus if getattr(g, key) == wanted), None)
            if found is not None:
                return found
        return None

    def locate(self, labels: Mapping[str, str]) -> tuple[Gpu | None, str | None]:
        """The GPU a metric's labels name (one of the inventory, else one made of the labels),
        or the bus id of another PCI device they name (a port, a switch, a NIC)."""
        ident = next((labels[k] for k in _GPU_ID_LABELS if labels.get(k)), None)
        bus = next((labels[k] for k in _GPU_BUS_LABELS if labels.get(k)), None)
        index_text = next((labels[k] for k in _GPU_INDEX_LABELS if labels.get(k)), None)
        index = int(index_text) if index_text is not None and index_text.isdigit() else None
        if ident is None and bus is None and index is None:
            return None, None
        gpu = self.find(index, ident, bus)
        if gpu is not None:
            return gpu, None
        if bus is not None and ident is None and index is None:
            return None, bus_id(bus) or bus
        return Gpu(index, ident, bus_id(bus), None, None), None

    def gpu_attrs(self, gpu: Gpu) -> Attrs:
        attrs: Attrs = {"hw.id": gpu.hw_id, "hw.type": "gpu"}
        if gpu.index is not None:
            attrs["hw.name"] = f"GPU {gpu.index}"
            attrs["sitscheck.gpu.index"] = str(gpu.index)
        if gpu.model:
            attrs["hw.model"] = gpu.model
            attrs["hw.vendor"] = "NVIDIA"
        if gpu.vbios:
            attrs["hw.firmware_version"] = gpu.vbios
        if self.driver_version:
            attrs["hw.driver_version"] = self.driver_version
        if gpu.pci_bus_id:
            attrs["sitscheck.gpu.pci_bus_id"] = gpu.pci_bus_id
        return attrs

    def device_attrs(self, device: Device | None) -> Attrs:
        """A finding's or verdict's device: a GPU as `hw.*`, another device by bus id."""
        if device is None:
            return {}
        gpu = self.find(device.index, None, device.pci_bus_id)
        if gpu is None and device.index is not None:
            gpu = Gpu(device.index, None, bus_id(device.pci_bus_id), device.name, None)
        if gpu is not None:
            return self.gpu_attrs(gpu)
        attrs: Attrs = {}
        if device.pci_bus_id:
            attrs["sitscheck.device.pci_bus_id"] = device.pci_bus_id
        if device.name:
            attrs["sitscheck.device.name"] = device.name
        return attrs


def _str(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def bus_id(value: Any) -> str | None:
    """`00000000:3B:00.0` and `0000:3b:00.0` alike: a 4-digit domain, lower case."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().lower()
    domain, sep, rest = text.partition(":")
    if sep and rest.count(":") == 1 and len(domain) > 4 and set(domain[:-4]) == {"0"}:
        return f"{domain[-4:]}:{rest}"
    return text


class GpuHealth(Struct, frozen=True):
    """A GPU's worst status named by a finding or verdict (ok when none names it), and its
    hardware state by the conventions (ok, degraded, failed, predicted_failure; None when
    unknown)."""

    status: Status
    state: str | None


def gpu_health(report: Report, inventory: Inventory) -> dict[str, GpuHealth]:
    """Each inventory GPU's health, by `hw_id`: the worst finding or verdict naming it (a GPU
    the driver calls lost is critical); a pending row remap is a predicted failure unless the
    GPU is failed already."""
    statuses: dict[str, list[Status]] = {gpu.hw_id: [] for gpu in inventory.gpus}
    for gpu in inventory.gpus:
        if gpu.state not in (None, "ok"):
            statuses[gpu.hw_id].append(Status.CRITICAL)
    predicted: set[str] = set()
    named: Iterable[tuple[Device | None, Status, str]] = [
        *((f.device, f.severity.as_status(), f.code) for c in report.checks for f in c.findings),
        *((v.device, v.status, v.rule) for v in report.verdicts),
    ]
    for device, status, code in named:
        if device is None:
            continue
        hw_id = inventory.device_attrs(device).get("hw.id")
        if isinstance(hw_id, str) and hw_id in statuses:
            statuses[hw_id].append(status)
            if code in PREDICTED_FAILURE:
                predicted.add(hw_id)
    health = {}
    for gpu in inventory.gpus:
        status = worst(statuses[gpu.hw_id])
        state = {
            Status.OK: "ok",
            Status.SKIPPED: "ok",
            Status.WARNING: "degraded",
            Status.CRITICAL: "failed",
        }.get(status)  # unknown: no state
        if gpu.hw_id in predicted and state in ("ok", "degraded"):
            state = "predicted_failure"
        health[gpu.hw_id] = GpuHealth(status, state)
    return health


def with_gpu_uuids(report: Report) -> Report:
    """The report with each finding's, verdict's and cleared item's GPU device carrying the
    GPU's UUID from the driver's inventory (matched by bus id, else index); the report itself
    is not changed. A device the inventory does not know (a port), or a GPU whose UUID no
    source knew (lost before any run named it), is left as it is.
    """
    inventory = Inventory.of(report)
    if not inventory.gpus:
        return report

    def named(device: Device | None) -> Device | None:
        if device is None or device.uuid is not None:
            return device
        gpu = inventory.find(device.index, None, device.pci_bus_id)
        if gpu is None or gpu.uuid is None:
            return device
        return replace(device, uuid=gpu.uuid)

    checks = [
        replace(check, findings=[replace(f, device=named(f.device)) for f in check.findings])
        for check in report.checks
    ]
    verdicts = [replace(v, device=named(v.device)) for v in report.verdicts]
    cleared = [replace(c, device=named(c.device)) for c in report.cleared]
    return replace(report, checks=checks, verdicts=verdicts, cleared=cleared)
