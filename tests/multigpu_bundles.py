"""Bundles for the multi-GPU tests, composed in a temporary folder from real recordings.

- `eight_h200(folder, bus_gbs)`: an 8x H200 HGX node: the recorded 4x H200 node
  (tests/bundles/h200x4-idle: NVML, nvidia-smi -L, sysfs; 18 NVLinks each, through NVSwitch)
  with four more GPUs made of its four (new bus ids 00:0a.0-00:0d.0 and UUIDs, every pair on
  NVLink as on an HGX board); a bandwidth record of the eight at the real H200's figures
  (tests/bundles/h200x1-bandwidth-v1) with the 56 ordered pairs' peer writes of an HGX H100's
  NVLink 4 (tests/corpus/bandwidth/nccl-1264-p2p-writes.txt, row 0 by distance); and the
  multi-GPU record of an all-reduce over the eight at `bus_gbs`. A healthy 8x H200 reaches
  about 475 GB/s with NCCL's defaults (Azure NHC's expectation, its floor 431:
  ../shared/docs/quick-check.md); about 370 with NVLink SHARP off
  (tests/corpus/bandwidth/nccl-allreduce-busbw.txt).
  The other outputs (nvidia-smi -q, the CSV, topo -m) stay the 4-GPU node's: the tests run
  the bandwidth and multigpu checks with the h200-sxm profile named, as `--profile` does.
- `with_allreduce(bundle, ...)`: the multi-GPU record of an all-reduce over a bundle's GPUs
  (its nvml.json), e.g. the recorded 2x H200 of `bandwidth_bundles.two_gpus`.
- `fact_bundles(folder)`: bundles that between them hold every fact the multigpu check and
  the bandwidth check's `nccl` write (tests/rules): the healthy 8x H200, the same with NVLink
  SHARP off, the recorded 2x H200 with an all-reduce.
- `allreduce(ranks, bus_gbs)`: a rank's `nccl` result as `sitscheck.probes.nccl` writes it,
  its times consistent with the figure (16 GiB, float32).
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

from bandwidth_bundles import CORPUS, RECORDED, p2p_writes, record, two_gpus, write_record

ROOT = Path(__file__).resolve().parents[1]
FOUR_H200 = ROOT / "tests" / "bundles" / "h200x4-idle"
RECORD = "accept/multigpu.json"
GIB = 1 << 30


def busbw(name: str) -> float:
    """A healthy board's figure of tests/corpus/bandwidth/nccl-allreduce-busbw.txt."""
    for line in (CORPUS / "nccl-allreduce-busbw.txt").read_text().splitlines():
        key, _, value = line.partition(" ")
        if key == name:
            return float(value)
    raise KeyError(name)


HEALTHY_BUS_GBS = busbw("nvls_8_gpus_busbw_gbs")  # 8 GPUs, NCCL's defaults (NVLink SHARP)
RING_BUS_GBS = busbw("ring_busbw_gbs")  # rings: NVLS off, or 2-4 GPUs


def allreduce(ranks: int, bus_gbs: float, nvls_disabled: bool = False) -> dict[str, Any]:
    nbytes = 16 * GIB
    alg_gbs = bus_gbs * ranks / (2 * (ranks - 1))
    return {"op": "all_reduce", "bytes": nbytes, "dtype": "float32", "ranks": ranks,
            "iterations": 20, "seconds_per_op": round(nbytes / (alg_gbs * 1e9), 6),
            "alg_gbs": round(alg_gbs, 1), "bus_gbs": bus_gbs, "nvls_disabled": nvls_disabled,
            "nccl_version": "2.28.9"}  # fmt: skip


def multigpu_record(
    gpus: list[dict[str, Any]], nccl: dict[str, Any] | None, reason: str | None = None
) -> dict[str, Any]:
    """The phase's record: every GPU's rank ended ok with `nccl` (or, null, `reason`)."""
    entries = []
    for rank, gpu in enumerate(gpus):
        result: dict[str, Any] = {"rank": rank, "nccl": nccl, "nccl_reason": reason}
        if nccl is not None:
            result.update(seconds_per_op=nccl["seconds_per_op"], wrong_elements=0,
                          expected_sum=len(gpus) * (len(gpus) + 1) / 2)  # fmt: skip
        entries.append({"index": gpu["index"], "uuid": gpu["uuid"],
                        "pci_bus_id": gpu["pci_bus_id"], "name": gpu["name"], "status": "ok",
                        "reason": None, "doing": "nccl: all-reduce, checking the sums",
                        "seconds": 9.8, "result": result})  # fmt: skip
    return {"format": "sitscheck-accept", "version": 1, "phase": "multigpu", "engine": "torch",
            "planned_s": 24.0, "started_at": "2026-12-02T01:45:10+00:00", "skipped": None,
            "gpus": entries, "result": {"nccl": nccl, "nccl_reason": reason}}  # fmt: skip


def write_multigpu(bundle: Path, data: dict[str, Any]) -> None:
    (bundle / RECORD).parent.mkdir(exist_ok=True)
    (bundle / RECORD).write_text(json.dumps(data, indent=1) + "\n")


def read_multigpu(bundle: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((bundle / RECORD).read_text())
    return data


def nvml_gpus(bundle: Path) -> list[dict[str, Any]]:
    gpus: list[dict[str, Any]] = json.loads((bundle / "nvml.json").read_text())["gpus"]
    return gpus


def with_allreduce(
    bundle: Path, bus_gbs: float = HEALTHY_BUS_GBS, nvls_disabled: bool = False
) -> Path:
    gpus = nvml_gpus(bundle)
    write_multigpu(bundle, multigpu_record(gpus, allreduce(len(gpus), bus_gbs, nvls_disabled)))
    return bundle


def eight_h200(
    folder: Path, bus_gbs: float = HEALTHY_BUS_GBS, nvls_disabled: bool = False,
    name: str = "h200x8-accept",
) -> Path:  # fmt: skip
    target = folder / name
    shutil.copytree(FOUR_H200, target)
    nvml = json.loads((target / "nvml.json").read_text())
    sysfs = target / "sysfs" / "devices" / "pci0000:00"
    for gpu in list(nvml["gpus"]):
        twin = json.loads(json.dumps(gpu))
        twin["index"] = gpu["index"] + 4
        twin["uuid"] = gpu["uuid"][:-4] + "8a8a"
        twin["pci_bus_id"] = f"0000:00:{10 + gpu['index']:02x}.0"
        shutil.copytree(sysfs / gpu["pci_bus_id"], sysfs / twin["pci_bus_id"])
        nvml["gpus"].append(twin)
    nvml["device_count"] = 8
    nvml["pairs"] = [{"a": a, "b": b, "common_ancestor": "hostbridge", "p2p_nvlink": True}
                     for a, b in itertools.combinations(range(8), 2)]  # fmt: skip
    (target / "nvml.json").write_text(json.dumps(nvml, indent=1) + "\n")
    (target / "nvidia-smi-L.txt").write_text("".join(
        f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})\n" for g in nvml["gpus"]
    ))  # fmt: skip
    _bandwidth(target, nvml["gpus"])
    write_multigpu(target, multigpu_record(nvml["gpus"], allreduce(8, bus_gbs, nvls_disabled)))
    return target


def _bandwidth(target: Path, gpus: list[dict[str, Any]]) -> None:
    real = record(RECORDED)
    entries = []
    for gpu in gpus:
        entry = dict(real["gpus"][0])
        entry.update(ordinal=gpu["index"], uuid=gpu["uuid"], pci_bus_id=gpu["pci_bus_id"])
        entries.append(entry)
    writes = p2p_writes()  # GPU0 -> GPU1 .. GPU7: by distance
    count = len(entries)
    pairs = [{"src": s, "dst": d, "gbs": writes[(d - s) % count - 1]}
             for s, d in itertools.permutations(range(count), 2)]  # fmt: skip
    write_record(target, {
        **real, "device_count": count, "gpus": entries, "p2p": pairs,
        "concurrent_h2d": {"gbs": {str(g["ordinal"]): g["h2d"]["gbs"] for g in entries}},
    })  # fmt: skip


def fact_bundles(folder: Path) -> list[Path]:
    return [
        eight_h200(folder),
        eight_h200(folder, RING_BUS_GBS, nvls_disabled=True, name="h200x8-accept-nvls-off"),
        with_allreduce(two_gpus(folder, "h200x2-accept"), RING_BUS_GBS),
    ]
