"""Bundles recorded on real H200 nodes (the lent device machine) replay as healthy nodes.

2×H200 (idle, and a PyTorch bf16 GEMM load; twice), 4×H200 (idle, load) and 1×H200 (idle),
recorded with `sitscheck collect` / `collect --load`. A healthy idle H200 draws ~80 W of
700 W; a loaded one sits at its power cap with the SW-power-cap clock reason and clocks below
max. Neither may raise anything above ok, and the facts must show what the node really was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from sitscheck.app import RunRequest, execute
from sitscheck.config import RunConfig
from sitscheck.models import Report, Severity, Status

BUNDLES = Path(__file__).resolve().parent.parent / "bundles"
RECORDED = {
    "h200x2-idle-v0": (BUNDLES / "h200x2-idle-v0", 2, False),
    "h200x2-load-v0": (BUNDLES.parent / "gpu" / "bundles" / "h200x2-load-v0", 2, True),
    "h200x4-idle": (BUNDLES / "h200x4-idle", 4, False),
    "h200x4-load": (BUNDLES / "h200x4-load", 4, True),
    # recorded after the window's counters moved inside it (issue 10): `counters_s` is kept
    "h200x2-idle-v1": (BUNDLES / "h200x2-idle-v1", 2, False),
    "h200x2-load-v1": (BUNDLES / "h200x2-load-v1", 2, True),
    # one H200 (no NVLink exposed in its VM), with memory, energy and NVLink throughput;
    # collected idle seconds after a --load run: the first samples read it cooling to ~80 W
    "h200x1-idle-v2": (BUNDLES / "h200x1-idle-v2", 1, False),
}
# The whole contract's evidence (`collect --bandwidth`, driver 580.159.04), collected seconds
# after a `--load --bandwidth` run: neither idle nor loaded (the GPU cools through the window).
CONTRACT_BUNDLE = BUNDLES / "h200x1-v3"


def replay(path: Path) -> Report:
    return execute(RunRequest(RunConfig(), str(path)))


@pytest.fixture(scope="module")
def replayed() -> Callable[[str], Report]:
    """Each recorded node replayed once for the three tests that read it (they only read)."""
    return cache(lambda name: replay(RECORDED[name][0]))


def facts(report: Report, check: str) -> dict[str, Any]:
    result = report.check(check)
    assert result is not None, check
    return result.facts


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_a_recorded_healthy_node_raises_nothing(
    replayed: Callable[[str], Report], name: str
) -> None:
    _path, gpus, _loaded = RECORDED[name]
    report = replayed(name)
    above_ok = [
        (c.name, f.code)
        for c in report.checks
        for f in c.findings
        if f.severity in (Severity.WARNING, Severity.CRITICAL, Severity.UNKNOWN)
    ] + [(v.rule, v.message) for v in report.verdicts if v.status.rank > Status.OK.rank]
    assert above_ok == []
    assert report.status == Status.OK and report.exit_code == 0
    assert report.profile == "h200-sxm"
    assert facts(report, "driver")["gpu_count"] == gpus
    ran = [c.name for c in report.checks if c.status != Status.SKIPPED]
    assert set(ran) >= {
        "driver",
        "gpu_telemetry",
        "pcie_link",
        "memory_errors",
        "nvlink",
        "topology",
        "xid",
        "pcie_aer",
    }


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_recorded_topology_is_all_nv18(replayed: Callable[[str], Report], name: str) -> None:
    _path, gpus, _loaded = RECORDED[name]
    topo = facts(replayed(name), "topology")
    assert topo["gpus"] == [f"GPU{i}" for i in range(gpus)]
    pairs = [
        link
        for link in topo["links"]
        if link["a"].startswith("GPU") and link["b"].startswith("GPU")
    ]
    assert len(pairs) == gpus * (gpus - 1)
    assert {link["kind"] for link in pairs} == ({"NV18"} if gpus > 1 else set())


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_recorded_load_shows_in_the_telemetry(
    replayed: Callable[[str], Report], name: str
) -> None:
    _path, gpus, loaded = RECORDED[name]
    telemetry = facts(replayed(name), "gpu_telemetry")["gpus"]
    assert len(telemetry) == gpus
    for gpu in telemetry:
        power, limit = gpu["power_w"]["mean"], gpu["power_limit_w"]
        assert limit == 700.0
        if loaded:
            assert gpu["util_gpu_pct"]["mean"] > 90
            assert power > 0.95 * limit  # at the cap, as a healthy loaded H200 is
            assert gpu["clock_reasons"]["sw_power_cap"] > 0.5
            assert gpu["sm_clock_mhz"]["max"] < gpu["sm_clock_max_mhz"]
        else:
            assert gpu["util_gpu_pct"]["mean"] < 5
            assert 60 < power < 130  # idle H200: ~80 W of 700
            assert gpu["clock_reasons"]["gpu_idle"] > 0.5


def test_the_recorded_bundles_hold_real_nvml_readings() -> None:
    for path, gpus, loaded in RECORDED.values():
        snapshot = json.loads((path / "nvml.json").read_text())
        assert snapshot["format"] == "sitscheck-nvml" and snapshot["device_count"] == gpus
        assert {g["name"] for g in snapshot["gpus"]} == {"NVIDIA H200"}
        assert (snapshot.get("load") or {}).get("engine") == ("torch" if loaded else None)
        if path.name.endswith("-v1"):  # counters read inside the window, most of it apart
            for gpu in snapshot["gpus"]:
                assert 0.5 * gpu["sampled_s"] < gpu["counters_s"] <= gpu["sampled_s"]
                assert all("errors_end" in link for link in gpu["nvlink"])


def test_the_bundle_of_every_declared_evidence_replays_healthy() -> None:
    report = replay(CONTRACT_BUNDLE)
    assert report.exit_code == 0
    assert [v.rule for v in report.verdicts if v.status.value in ("warning", "critical")] == []
    bandwidth = facts(report, "bandwidth")["gpus"]
    assert len(bandwidth) == 1 and 50 < bandwidth[0]["h2d_gbs"] < 63  # Gen5 x16: 63 GB/s
    telemetry = facts(report, "gpu_telemetry")["gpus"][0]
    assert telemetry["memory_total_bytes"] > 140e9  # 141 GB of HBM3e, as NVML reads it
