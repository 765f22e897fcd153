"""Bundles for the bandwidth tests, made from real recordings in a temporary folder.

- `RECORDED`: tests/bundles/h200x1-bandwidth-v1, `sitscheck collect --bandwidth` on a real
  H200 (Gen5 x16, driver 580.159.04).
- `two_gpus(folder)`: the recorded 2×H200 node (tests/bundles/h200x2-idle-v1: NVML,
  nvidia-smi, sysfs; NVLink 4, 18 links each, through NVSwitch) with a bandwidth record for
  its two GPUs: each GPU's figures are the real H200's above; at once, each its own figure
  (the two sit on separate root ports); peer writes as an HGX H100's NVLink 4 measured them
  (tests/corpus/bandwidth/nccl-1264-p2p-writes.txt).
- `set_h2d(bundle, gpu, gbs)`: one GPU's host→device figure changed.
- `behind_one_port(bundle, together)`: both GPUs moved behind one PCIe switch (root port →
  switch upstream port → a downstream port each, every link Gen5 x16 like the recorded
  GPUs'), renamed to buses 03 and 04 in every file, with the given concurrent figures.
- `facts_variants(folder)`: bundles that between them hold every fact the check writes (for
  tests/rules/test_facts_models.py): the two GPUs; behind one port at half the link each;
  their pair over PCIe (NVML reads no NVLink P2P) with one direction refused.

Importable from every test folder (tests/ is on the path, as for corpus_paths).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import yaml
from sitscheck.engine.loader import builtin_rules_dir

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "bundles" / "h200x1-bandwidth-v1"
TWO_H200 = ROOT / "tests" / "bundles" / "h200x2-idle-v1"
CORPUS = ROOT / "tests" / "corpus" / "bandwidth"
RULE_FILE = builtin_rules_dir() / "bandwidth.yaml"

ROOT_PORT = "0000:00:01.0"
SWITCH_UP = "0000:01:00.0"
SWITCH_DOWN = ("0000:02:00.0", "0000:02:01.0")
RENAMED = {":00:06.0": ":03:00.0", ":00:07.0": ":04:00.0"}
LINK_FILES = {
    "current_link_speed": "32.0 GT/s PCIe",
    "max_link_speed": "32.0 GT/s PCIe",
    "current_link_width": "16",
    "max_link_width": "16",
    "vendor": "0x1000",
    "class": "0x060400",
}


def params() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(RULE_FILE.read_text())
    return dict(data["params"])


def record(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "bandwidth.json").read_text())
    return data


def write_record(path: Path, data: dict[str, Any]) -> None:
    (path / "bandwidth.json").write_text(json.dumps(data) + "\n")


def p2p_writes() -> list[float]:
    """Row 0 of the P2P-writes matrix in the NCCL issue's excerpt (GPU0 → GPU1, GPU2, ...)."""
    lines = (CORPUS / "nccl-1264-p2p-writes.txt").read_text().splitlines()
    header = next(i for i, line in enumerate(lines) if "P2P Writes" in line)
    cells = lines[header + 2].split()
    return [float(c) for c in cells[2:]]


def two_gpus(folder: Path, name: str = "h200x2-bandwidth") -> Path:
    target = folder / name
    shutil.copytree(TWO_H200, target)
    real = record(RECORDED)
    nvml = json.loads((TWO_H200 / "nvml.json").read_text())
    gpus = []
    for ordinal, gpu in enumerate(nvml["gpus"]):
        entry = dict(real["gpus"][0])
        entry.update(ordinal=ordinal, uuid=gpu["uuid"], pci_bus_id=gpu["pci_bus_id"])
        gpus.append(entry)
    writes = p2p_writes()
    data = {
        **real,
        "device_count": len(gpus),
        "gpus": gpus,
        "concurrent_h2d": {
            "gbs": {str(g["ordinal"]): g["h2d"]["gbs"] for g in gpus},
            "wall_gbs": round(sum(g["h2d"]["gbs"] for g in gpus), 2),
        },
        "p2p": [
            {"src": 0, "dst": 1, "gbs": writes[0], "samples": [writes[0]]},
            {"src": 1, "dst": 0, "gbs": writes[1], "samples": [writes[1]]},
        ],
    }
    write_record(target, data)
    return target


def set_h2d(bundle: Path, ordinal: int, gbs: float) -> None:
    data = record(bundle)
    data["gpus"][ordinal]["h2d"] = {"gbs": gbs, "samples": [gbs]}
    write_record(bundle, data)


def set_concurrent(bundle: Path, figures: list[float]) -> None:
    data = record(bundle)
    data["concurrent_h2d"] = {"gbs": {str(i): v for i, v in enumerate(figures)}}
    write_record(bundle, data)


def behind_one_port(bundle: Path, together: list[float]) -> None:
    for path in bundle.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="surrogateescape")
            renamed = text
            for old, new in RENAMED.items():
                renamed = renamed.replace(old, new)
            if renamed != text:
                path.write_text(renamed, encoding="utf-8", errors="surrogateescape")
    top = bundle / "sysfs" / "devices" / "pci0000:00"
    up = top / ROOT_PORT / SWITCH_UP
    for folder in (top / ROOT_PORT, up):
        _port(folder)
    for gpu, down in zip(sorted(RENAMED.values()), SWITCH_DOWN, strict=True):
        old = top / ("0000" + _original(gpu))
        _port(up / down)
        shutil.move(str(old), str(up / down / ("0000" + gpu)))
    set_concurrent(bundle, together)


def _original(renamed: str) -> str:
    return next(old for old, new in RENAMED.items() if new == renamed)


def _port(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, value in LINK_FILES.items():
        (folder / name).write_text(value + "\n")


def facts_variants(folder: Path) -> list[Path]:
    healthy = two_gpus(folder, "bandwidth-nvlink")
    shared = two_gpus(folder, "bandwidth-shared-port")
    alone = [g["h2d"]["gbs"] for g in record(shared)["gpus"]]
    behind_one_port(shared, [round(sum(alone) / 4, 2)] * 2)
    pcie = two_gpus(folder, "bandwidth-pcie")
    nvml = json.loads((pcie / "nvml.json").read_text())
    for pair in nvml["pairs"]:
        pair["p2p_nvlink"] = False
    (pcie / "nvml.json").write_text(json.dumps(nvml, indent=1) + "\n")
    data = record(pcie)
    data["p2p"] = data["p2p"][:1]
    data["p2p_refused"] = [{"src": 1, "dst": 0, "reason": "no peer access"}]
    write_record(pcie, data)
    return [healthy, shared, pcie]
