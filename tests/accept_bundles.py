"""Acceptance bundles for the tests, made from real recordings in a temporary folder.

- `one_gpu(folder)`: the recorded 1×H200 bundle tests/bundles/h200x1-v3 (`sitscheck collect
  --bandwidth` on a real H200, driver 580) with the healthy acceptance records of
  tests/accept/data/h200x1/accept (make_records.py there says where each figure comes from).
- `eight_gpus(folder, slow)`: an HGX H200 node of 8 composed from the recorded 4×H200 node
  tests/bundles/h200x4-idle (its NVML snapshot and sysfs; GPUs 4-7 are copies of GPUs 0-3 on
  buses 0a-0d, each pair on NVLink as the recorded pairs are), every GPU with the one H200's
  acceptance and bandwidth figures above, GPU `g`'s throughput figures scaled by `slow[g]`
  (TFLOP/s, memory-test and copy bandwidth times the factor, iteration times divided by it).
- `read(bundle, phase)` / `write(bundle, phase, data)`: a phase's record, for a fault's edit.
- `replay(bundle)`: `sitscheck run --from` through the real CLI, the JSON report parsed.

Importable from every test folder (tests/ is on the path, as for bandwidth_bundles).
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path
from typing import Any

from sitscheck.cli import app
from typer.testing import CliRunner

TESTS = Path(__file__).resolve().parent
ONE_H200 = TESTS / "bundles" / "h200x1-v3"
FOUR_H200 = TESTS / "bundles" / "h200x4-idle"
RECORDS = TESTS / "accept" / "data" / "h200x1" / "accept"
PHASES = ("memtest", "compute", "soak")
# the healthy soak's load began this long after its sampler started (the children's start-up)
LOAD_STARTED_S: float = json.loads((RECORDS / "soak.json").read_text())["gpus"][0]["result"][
    "load_started_s"
]
# what the composed node leaves out of the 4-GPU recording: files that list its four GPUs only
LEFT_OUT = ("nvidia-smi-q.txt", "nvidia-smi-query-gpu.csv", "nvidia-smi-dmon.txt",
            "nvidia-smi-L.txt", "nvidia-smi-topo-m.txt")  # fmt: skip


def one_gpu(folder: Path, name: str = "h200x1-accept") -> Path:
    target = folder / name
    shutil.copytree(ONE_H200, target)
    shutil.copytree(RECORDS, target / "accept")
    return target


def read(bundle: Path, phase: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((bundle / "accept" / f"{phase}.json").read_text())
    return data


def write(bundle: Path, phase: str, data: dict[str, Any]) -> None:
    (bundle / "accept" / f"{phase}.json").write_text(json.dumps(data, indent=1) + "\n")


def result(bundle: Path, phase: str, gpu: int = 0) -> dict[str, Any]:
    """GPU `gpu`'s result object in a record (edited in place by the caller, then `write`)."""
    entry = next(g for g in read(bundle, phase)["gpus"] if g["index"] == gpu)
    found: dict[str, Any] = entry["result"]
    return found


def edit(bundle: Path, phase: str, gpu: int, **changes: Any) -> None:
    """Set keys of GPU `gpu`'s entry (status, reason, result) in a phase's record."""
    data = read(bundle, phase)
    for entry in data["gpus"]:
        if entry["index"] == gpu:
            entry.update(changes)
    write(bundle, phase, data)


def edit_result(bundle: Path, phase: str, gpu: int, **changes: Any) -> None:
    data = read(bundle, phase)
    for entry in data["gpus"]:
        if entry["index"] == gpu:
            entry["result"].update(changes)
    write(bundle, phase, data)


def eight_gpus(
    folder: Path, slow: dict[int, float], name: str = "h200x8-accept", gpus: int = 8
) -> Path:
    """The composed node (`gpus` of its 8 GPUs: the first ones) with `slow`'s factors."""
    target = folder / name
    shutil.copytree(FOUR_H200, target)
    for left_out in LEFT_OUT:
        (target / left_out).unlink(missing_ok=True)
    identities = _eight_nvml(target, gpus)
    _eight_sysfs(target, {g["pci_bus_id"] for g in identities})
    (target / "accept").mkdir()
    for phase in PHASES:
        data = json.loads((RECORDS / f"{phase}.json").read_text())
        real = data["gpus"][0]
        data["gpus"] = [
            _scaled(phase, real, gpu, slow.get(gpu["index"], 1.0)) for gpu in identities
        ]
        write(target, phase, data)
    bandwidth = json.loads((ONE_H200 / "bandwidth.json").read_text())
    real = bandwidth["gpus"][0]
    bandwidth["device_count"] = len(identities)
    bandwidth["gpus"] = [
        _bandwidth(real, gpu, ordinal, slow.get(gpu["index"], 1.0))
        for ordinal, gpu in enumerate(identities)
    ]
    (target / "bandwidth.json").write_text(json.dumps(bandwidth, indent=1) + "\n")
    return target


def _eight_nvml(target: Path, count: int) -> list[dict[str, Any]]:
    nvml = json.loads((target / "nvml.json").read_text())
    four = nvml["gpus"]
    copies = []
    for gpu in four:
        copy = json.loads(json.dumps(gpu))
        copy["index"] = gpu["index"] + len(four)
        copy["pci_bus_id"] = _moved(gpu["pci_bus_id"])
        copy["uuid"] = gpu["uuid"][:-4] + f"{copy['index']:04x}"
        copy["serial"] = str(int(gpu["serial"]) + 100)
        copies.append(copy)
    nvml["gpus"] = (four + copies)[:count]
    nvml["device_count"] = len(nvml["gpus"])
    template = nvml["pairs"][0]
    nvml["pairs"] = [
        {**template, "a": a, "b": b} for a, b in itertools.combinations(range(len(nvml["gpus"])), 2)
    ]
    (target / "nvml.json").write_text(json.dumps(nvml, indent=1) + "\n")
    return [
        {"index": g["index"], "uuid": g["uuid"], "pci_bus_id": g["pci_bus_id"], "name": g["name"]}
        for g in nvml["gpus"]
    ]


def _moved(bus_id: str) -> str:
    """0000:00:06.0 -> 0000:00:0a.0 (the copy of GPU n sits four slots on)."""
    domain, bus, rest = bus_id.split(":")
    slot, function = rest.split(".")
    return f"{domain}:{bus}:{int(slot, 16) + 4:02x}.{function}"


def _eight_sysfs(target: Path, kept: set[str]) -> None:
    root = target / "sysfs" / "devices" / "pci0000:00"
    for folder in sorted(root.iterdir()):
        copy = root / _moved(folder.name)
        if not copy.exists():
            shutil.copytree(folder, copy)
    for folder in sorted(root.iterdir()):
        if folder.name not in kept:
            shutil.rmtree(folder)


def _scaled(phase: str, real: dict[str, Any], gpu: dict[str, Any], factor: float) -> dict[str, Any]:
    entry = {**json.loads(json.dumps(real)), **gpu}
    result = entry["result"]
    if phase == "memtest":
        result["seconds"] = round(result["seconds"] / factor, 3)
    elif phase == "compute":
        result["tflops_median"] = round(result["tflops_median"] * factor, 1)
    elif phase == "soak":
        result["times"] = [[t, [round(ms / factor, 4) for ms in values]]
                           for t, values in result["times"]]  # fmt: skip
    return entry


def _bandwidth(real: dict[str, Any], gpu: dict[str, Any], ordinal: int, factor: float) -> Any:
    entry = {**json.loads(json.dumps(real)), "ordinal": ordinal}
    entry.update({k: gpu[k] for k in ("name", "pci_bus_id", "uuid")})
    for key in ("h2d", "d2h", "local_ce", "local_kernel"):
        entry[key]["gbs"] = round(entry[key]["gbs"] * factor, 2)
        entry[key]["samples"] = [round(v * factor, 2) for v in entry[key]["samples"]]
    entry["local_copy_gbs"] = round(entry["local_copy_gbs"] * factor, 2)
    entry["hbm_gbs"] = round(entry["hbm_gbs"] * factor, 2)
    return entry


def replay(bundle: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """`sitscheck run --from BUNDLE -o json`: the exit code and the report."""
    done = CliRunner().invoke(app, ["run", "--from", str(bundle), "-o", "json", *args])
    report: dict[str, Any] = json.loads(done.stdout)
    return done.exit_code, report


def check(report: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in report["checks"] if c["name"] == name)
    return found


def fired(report: dict[str, Any]) -> list[tuple[str, str, int | None]]:
    """(rule, status, GPU index) of every verdict above ok, sorted."""
    return sorted(
        (v["rule"], v["status"], (v["device"] or {}).get("index"))
        for v in report["verdicts"]
        if v["status"] in ("warning", "critical", "unknown")
    )


def findings(report: dict[str, Any]) -> list[tuple[str, str, int | None]]:
    """(code, severity, GPU index) of every check's finding, sorted."""
    return sorted(
        (f["code"], f["severity"], (f["device"] or {}).get("index"))
        for c in report["checks"]
        for f in c["findings"]
    )


def facts_variants(folder: Path) -> list[Path]:
    """Bundles that between them hold every fact the acceptance checks write (for
    tests/rules/test_facts_models.py): the healthy H200; the same with a bad word, no ECC
    reading before the test, a mismatched repeat and no clock-event reasons in the soak's
    samples; the same with figures the records do not hold (null facts); the composed 8-GPU
    node."""
    healthy = one_gpu(folder, "h200x1-accept")
    faulty = one_gpu(folder, "h200x1-accept-faults")
    bad = {
        "address": 140090836779008,
        "expected": "0x9887860f1ac14340",
        "read": "0x0badf00ddeadbeef",
    }
    edit_result(faulty, "memtest", 0, bad_words=1, first_bad=bad, ecc_before=None)
    edit_result(faulty, "compute", 0, mismatched=[3])
    data = read(faulty, "soak")
    for sample in data["gpus"][0]["result"]["samples"]:
        sample["clock_event_reasons"] = None
    write(faulty, "soak", data)
    unmeasured = one_gpu(folder, "h200x1-accept-unmeasured")
    for phase, keys in (("memtest", ("bytes_tested", "passes", "bad_words", "patterns",
                                     "seconds")),
                        ("compute", ("dtype", "shape", "repeats", "mismatched")),
                        ("soak", ("seconds",))):  # fmt: skip
        data = read(unmeasured, phase)
        for key in keys:
            del data["gpus"][0]["result"][key]
        write(unmeasured, phase, data)
    return [healthy, faulty, unmeasured, eight_gpus(folder, {5: 0.85, 6: 0.70})]
