"""Write tests/bundles/faults/*: the recorded idle 2×H200 bundle with one injected fault each.

Run from the repository root: `.venv/bin/python tests/gpu/make_fault_bundles.py`. The output is
committed; this script is how it was made (and how to remake it after the recording changes).
Every edit is made in each form of evidence the fault would show in (nvml.json, the CSV query,
dmon, `-q`, `-L`, sysfs), so a replay from NVML and one from nvidia-smi alone agree.

- `pcie-x8-gpu1`: GPU 1's link trained to x8 (NVML, sysfs, CSV, -q).
- `remap-pending-gpu0`: GPU 0 remapped a row for correctable errors; the remap awaits a reset.
- `nvlink-inactive-gpu0`: GPU 0's NVLink 5 is down.
- `gpu-lost-gpu1`: GPU 1 is lost: NVML has no handle for it; nvidia-smi prints its error line.
- `busy-h200x2` (synthesised, healthy): both GPUs under a bf16 GEMM load as measured on real
  H200s: utilization 93–97 %, power at the 700 W cap with reason 0x4 (SW power cap), SM clock
  1.47–1.56 GHz of 1.98, 53–56 °C; NVLink CRC-data counters growing a few per link (real
  loaded H200s: ~15/s per GPU), replay and recovery counters still.
- `hw-slowdown-busy-gpu0`: the busy variant with HW slowdown (0x8) on GPU 0.
- `zero-watts-busy-gpu1`: the busy variant with GPU 1 reading 0 W.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "tests" / "bundles" / "h200x2-idle-v0"
OUT = ROOT / "tests" / "bundles" / "faults"
BUS = {0: "0000:00:06.0", 1: "0000:00:07.0"}
Q_HEADER = {0: "GPU 00000000:00:06.0", 1: "GPU 00000000:00:07.0"}

# Deterministic "measured-looking" series for the busy variant (13 samples, as recorded).
UTIL = [95, 96, 93, 97, 95, 94, 96, 95, 97, 93, 95, 96, 94]
POWER = [689.2, 695.8, 699.1, 686.4, 692.7, 698.3, 690.5, 694.1, 697.6, 688.9, 693.3, 696.0, 691.8]
SM_CLOCK = [1515, 1530, 1470, 1545, 1500, 1485, 1560, 1515, 1530, 1490, 1525, 1540, 1505]
TEMP = [53, 53, 54, 54, 54, 55, 55, 55, 55, 56, 56, 56, 56]


class Bundle:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.nvml: dict[str, Any] = json.loads((path / "nvml.json").read_text())

    def gpu(self, index: int) -> dict[str, Any]:
        return next(g for g in self.nvml["gpus"] if g["index"] == index)

    def text(self, name: str) -> str:
        return (self.path / name).read_text()

    def write(self, name: str, text: str) -> None:
        (self.path / name).write_text(text)

    def csv_set(self, index: int, field: str, value: str) -> None:
        lines = self.text("nvidia-smi-query-gpu.csv").splitlines()
        header = [c.strip() for c in lines[0].split(",")]
        column = next(i for i, h in enumerate(header) if h.split(" [")[0] == field)
        for number, line in enumerate(lines[1:], start=1):
            cells = [c.strip() for c in line.split(",")]
            if cells[0] == str(index):
                cells[column] = value
                lines[number] = ", ".join(cells)
        self.write("nvidia-smi-query-gpu.csv", "\n".join(lines) + "\n")

    def q_set(self, index: int, labels: list[str], value: str) -> None:
        """Set `value` on the line reached by `labels` (each searched after the one before)
        inside GPU `index`'s section of nvidia-smi -q."""
        lines = self.text("nvidia-smi-q.txt").split("\n")
        at = lines.index(Q_HEADER[index])
        for label in labels:
            at = next(i for i in range(at + 1, len(lines)) if lines[i].strip().startswith(label))
        key, _, _ = lines[at].partition(":")
        lines[at] = f"{key}: {value}"
        self.write("nvidia-smi-q.txt", "\n".join(lines))

    def sysfs_set(self, index: int, name: str, value: str) -> None:
        (self.path / "sysfs/devices/pci0000:00" / BUS[index] / name).write_text(value + "\n")

    def note(self, text: str) -> None:
        meta = json.loads(self.text("meta.json"))
        meta["note"] = text
        self.write("meta.json", json.dumps(meta, indent=2) + "\n")

    def save(self) -> None:
        self.write("nvml.json", json.dumps(self.nvml, indent=1) + "\n")


def make(name: str, note: str, edit: Callable[[Bundle], None], base: Path = RECORDED) -> None:
    target = OUT / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(base, target)
    bundle = Bundle(target)
    edit(bundle)
    bundle.note(note)
    bundle.save()


def pcie_x8(b: Bundle) -> None:
    b.gpu(1)["pcie"]["width_current"] = 8
    b.sysfs_set(1, "current_link_width", "8")
    b.csv_set(1, "pcie.link.width.current", "8")
    b.q_set(1, ["Link Width", "Current"], "8x")


def remap_pending(b: Bundle) -> None:
    gpu = b.gpu(0)
    gpu["remap"].update({"corrected": 1, "pending": True})
    gpu["remap"]["histogram"].update({"max": 3071, "high": 1})
    for scope in ("volatile", "aggregate"):
        gpu["ecc"][scope]["corrected"] = 2
        b.csv_set(0, f"ecc.errors.corrected.{scope}.total", "2")
    b.q_set(0, ["Remapped Rows", "Correctable Error"], "1")
    b.q_set(0, ["Remapped Rows", "Pending"], "Yes")
    b.q_set(0, ["Remapped Rows", "Bank Remap Availability Histogram", "Max"], "3071 bank(s)")
    b.q_set(0, ["Remapped Rows", "Bank Remap Availability Histogram", "High"], "1 bank(s)")


def nvlink_inactive(b: Bundle) -> None:
    link = b.gpu(0)["nvlink"][5]
    link["active"] = False
    link.pop("remote_pci_bus_id", None)
    link.pop("version", None)


def gpu_lost(b: Bundle) -> None:
    error = "Unable to determine the device handle for GPU1: 0000:00:07.0: GPU is lost.  "
    error += "Reboot the system to recover this GPU"
    b.nvml["gpus"][1] = {
        "index": 1,
        "lost": {
            "state": "gpu_lost",
            "detail": "nvmlDeviceGetHandleByIndex(1): GPU is lost (NVML_ERROR_GPU_IS_LOST)",
        },
    }
    b.nvml["pairs"] = []
    b.write("nvidia-smi-L.txt", b.text("nvidia-smi-L.txt").splitlines()[0] + "\n" + error + "\n")
    csv = b.text("nvidia-smi-query-gpu.csv").splitlines()
    b.write("nvidia-smi-query-gpu.csv", "\n".join([*csv[:2], error]) + "\n")
    dmon = b.text("nvidia-smi-dmon.txt").splitlines()
    b.write("nvidia-smi-dmon.txt", "\n".join(dmon[:3]) + "\n")
    q = b.text("nvidia-smi-q.txt").split("\n")
    b.write("nvidia-smi-q.txt", "\n".join([*q[: q.index(Q_HEADER[1])], error, ""]))


def busy(b: Bundle) -> None:
    b.nvml["load"] = {"synthesised": True, "what": "bf16 GEMM on every GPU, as measured"}
    for gpu in b.nvml["gpus"]:
        shift = gpu["index"]
        for k, sample in enumerate(gpu["samples"]):
            j = (k + 3 * shift) % len(UTIL)
            sample.update(
                util_gpu=UTIL[j],
                util_mem=38 + j % 5,
                power_w=POWER[j],
                sm_clock_mhz=SM_CLOCK[j],
                mem_clock_mhz=3201,
                temp_c=TEMP[k],
                mem_temp_c=TEMP[k] + 7,
                clock_event_reasons=0x4,
                pcie_tx_kbps=1_850_000 + 1000 * j,
                pcie_rx_kbps=9_600_000 + 5000 * j,
            )
        for n, record in enumerate(gpu["gpm"]):
            record.update(
                sm_util=90.5 + n,
                sm_occupancy=43.2 + n,
                tensor_active=58.4 + n,
                dram_bw_util=34.1 + n,
            )
        start = gpu["violations_ns_start"]
        gpu["violations_ns_end"] = {**start, "power": start["power"] + 2_900_000_000}
        for link in gpu["nvlink"]:  # CRC-data counters grow as on real loaded H200s (~26/s)
            link["errors_end"] = {**link["errors"]}
            link["errors_end"]["crc_data"] += 3 + link["link"] % 4
        b.csv_set(shift, "utilization.gpu", f"{UTIL[shift]} %")
        b.csv_set(shift, "utilization.memory", "40 %")
        b.csv_set(shift, "power.draw", f"{POWER[shift]:.2f} W")
        b.csv_set(shift, "clocks.current.sm", f"{SM_CLOCK[shift]} MHz")
        b.csv_set(shift, "clocks_event_reasons.active", "0x0000000000000004")
        b.csv_set(shift, "temperature.gpu", "55")
        b.csv_set(shift, "temperature.memory", "62")
    header = b.text("nvidia-smi-dmon.txt").splitlines()[:2]
    rows = [
        f"    {i}    {int(POWER[i])}     55     62     {UTIL[i]}     40      0      0      0"
        f"      0   3201   {SM_CLOCK[i]}    100      0  80000      1      0      0      0"
        f"    {2 + 2 * i}   9600   1850 "
        for i in (0, 1)
    ]
    b.write("nvidia-smi-dmon.txt", "\n".join([*header, *rows]) + "\n")
    (b.path / "nvidia-smi-q.txt").unlink()  # not synthesised: a replay would read idle values


def hw_slowdown(b: Bundle) -> None:
    gpu = b.gpu(0)
    for k, sample in enumerate(gpu["samples"]):
        sample.update(clock_event_reasons=0x8, sm_clock_mhz=990 - 15 * (k % 3), power_w=505.0 + k)
    gpu["violations_ns_end"] = copy.deepcopy(gpu["violations_ns_start"])
    b.csv_set(0, "clocks_event_reasons.active", "0x0000000000000008")
    b.csv_set(0, "clocks.current.sm", "990 MHz")
    b.csv_set(0, "power.draw", "505.00 W")


def zero_watts(b: Bundle) -> None:
    gpu = b.gpu(1)
    for sample in gpu["samples"]:
        sample.update(power_w=0.0, clock_event_reasons=0x0)
    gpu["violations_ns_end"] = copy.deepcopy(gpu["violations_ns_start"])
    b.csv_set(1, "power.draw", "0.00 W")
    b.csv_set(1, "clocks_event_reasons.active", "0x0000000000000000")
    dmon = b.text("nvidia-smi-dmon.txt").splitlines()
    dmon[3] = dmon[3].replace(f"    1    {int(POWER[1])}", "    1      0", 1)
    b.write("nvidia-smi-dmon.txt", "\n".join(dmon) + "\n")


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    idle = "tests/bundles/h200x2-idle-v0 with one injected fault: "
    make("pcie-x8-gpu1", idle + "GPU 1's PCIe link at x8", pcie_x8)
    make("remap-pending-gpu0", idle + "GPU 0 has a row remap pending", remap_pending)
    make("nvlink-inactive-gpu0", idle + "GPU 0's NVLink 5 inactive", nvlink_inactive)
    make("gpu-lost-gpu1", idle + "GPU 1 lost", gpu_lost)
    make(
        "busy-h200x2",
        "synthesised from tests/bundles/h200x2-idle-v0: both GPUs busy at the power cap "
        "(healthy); nvidia-smi-q.txt left out (not synthesised)",
        busy,
    )
    base = OUT / "busy-h200x2"
    loaded = "busy-h200x2 with one injected fault: "
    make("hw-slowdown-busy-gpu0", loaded + "GPU 0 in HW slowdown", hw_slowdown, base)
    make("zero-watts-busy-gpu1", loaded + "GPU 1 reads 0 W", zero_watts, base)


if __name__ == "__main__":
    main()
