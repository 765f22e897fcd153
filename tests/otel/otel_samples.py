"""Reports for the OTLP export tests: a hand-made one holding every kind of thing, a series."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from sitscheck.config import OtlpSettings
from sitscheck.models import (
    CheckResult,
    Device,
    Evidence,
    Finding,
    Layer,
    Metric,
    Report,
    Severity,
    Status,
    Verdict,
)

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tests" / "bundles" / "h200x2-idle-v0"
UUID0 = "GPU-3d593023-41d0-bcb0-fd5b-7849b655a02f"
UUID1 = "GPU-9f23e032-f1a8-da44-56dc-43ccc4c4bdba"
TOKEN = "Bearer s3cr3t-t0ken-value"


def sample_report(started: datetime | None = None) -> Report:
    """A hand-made report holding every kind of thing the export maps."""
    started = started or datetime(2026, 11, 29, 18, 3, 16, 250000, tzinfo=timezone.utc)
    gpu0 = Device(index=0, pci_bus_id="0000:00:06.0", name="NVIDIA H200")
    gpu1 = Device(index=1, pci_bus_id="00000000:00:07.0", name="NVIDIA H200")
    labels0 = {"hw.id": UUID0, "gpu.index": "0"}
    labels1 = {"hw.id": UUID1, "gpu.index": "1"}
    driver = CheckResult(
        name="driver",
        layer=Layer.DRIVER,
        status=Status.OK,
        duration_s=0.01,
        metrics=[Metric(name="sitscheck.gpu.number", value=2, unit="{gpu}")],
        facts={
            "driver_version": "580.159.04",
            "gpu_count": 2,
            "gpus": [
                {
                    "index": 0,
                    "name": "NVIDIA H200",
                    "uuid": UUID0,
                    "pci_bus_id": "0000:00:06.0",
                    "vbios": "96.00.A5.00.1A",
                    "state": "ok",
                },
                {
                    "index": 1,
                    "name": "NVIDIA H200",
                    "uuid": UUID1,
                    "pci_bus_id": "0000:00:07.0",
                    "vbios": "96.00.A5.00.1A",
                    "state": "ok",
                },
            ],
        },
    )
    telemetry = CheckResult(
        name="gpu_telemetry",
        status=Status.WARNING,
        duration_s=3.2,
        findings=[
            Finding(
                code="gpu_telemetry.hw_slowdown",
                severity=Severity.WARNING,
                message="GPU 1: HW slowdown active in 40% of samples",
                device=gpu1,
                evidence=[Evidence(source="nvml", ref="nvmlDeviceGetClocksEventReasons")],
                action="check cooling and power delivery",
            )
        ],
        metrics=[
            Metric(name="hw.gpu.utilization", value=0.97, unit="1", labels=labels0),
            Metric(name="hw.gpu.utilization", value=12.0, unit="%", labels=labels1),
            Metric(name="hw.power", value=689.5, unit="W", labels=labels0),
            Metric(name="hw.power", value=120500.0, unit="mW", labels=labels1),
            Metric(name="hw.gpu.memory.usage", value=1024.0, unit="MiB", labels=labels0),
            Metric(name="sitscheck.gpu.clock", value=1980, unit="MHz", labels=labels0),
            Metric(name="hw.gpu.io", value=2.5e9, unit="By/s", labels=labels0),
        ],
    )
    memory = CheckResult(
        name="memory_errors",
        layer=Layer.HARDWARE,
        status=Status.CRITICAL,
        duration_s=0.5,
        findings=[
            Finding(
                code="memory_errors.dbe_volatile",
                severity=Severity.CRITICAL,
                message="GPU 0: 2 volatile double-bit ECC errors",
                device=gpu0,
                action="drain the node and reset the GPU",
            ),
            Finding(
                code="memory_errors.note",
                severity=Severity.INFO,
                message="row remapping available",
            ),
        ],
        metrics=[
            Metric(
                name="hw.errors",
                value=2,
                unit="{error}",
                labels={**labels0, "error.type": "ecc_uncorrected", "hw.type": "gpu"},
            ),
            Metric(
                name="hw.errors",
                value=5,
                unit="{error}",
                labels={"device": "0000:80:01.0", "error.type": "pcie_aer_corrected"},
            ),
        ],
    )
    xid = CheckResult(
        name="xid",
        status=Status.UNKNOWN,
        duration_s=20.0,
        error="timed out: no result within its deadline (20.0s)",
    )
    tensorrt = CheckResult(
        name="tensorrt", status=Status.SKIPPED, skip_reason="no TensorRT build logs given"
    )
    verdicts = [
        Verdict(
            rule="gpu.ecc_dbe",
            status=Status.CRITICAL,
            message="GPU 0 has uncorrectable memory errors",
            layer=Layer.HARDWARE,
            device=gpu0,
            action="replace the GPU",
            source="rules/gpu-health.yaml",
            explains=["xid.48"],
        ),
        Verdict(rule="node.gpu_count", status=Status.OK, message="2 GPUs as expected"),
    ]
    return Report(
        sitscheck_version="0.1.0",
        host="gpu-node-7",
        started_at=started.isoformat(),
        duration_s=21.5,
        status=Status.CRITICAL,
        headline="CRITICAL — checks: gpu_telemetry, memory_errors, xid",
        mode="live",
        profile="h200",
        checks=[driver, telemetry, memory, xid, tensorrt],
        verdicts=verdicts,
    )


def reports(count: int, minutes_ago: float = 30.0) -> list[Report]:
    """`count` sample reports of runs a minute apart, the first `minutes_ago` (spool ages)."""
    base = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(minutes=minutes_ago)
    return [sample_report(base + timedelta(minutes=i)) for i in range(count)]


def settings_for(endpoint: str, protocol: str, **extra: Any) -> OtlpSettings:
    return OtlpSettings(endpoint=endpoint, protocol=protocol, timeout_s=2.0, **extra)
