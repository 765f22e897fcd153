"""Synthetic inputs for the benchmarks, built from recorded real data.

- `kernel_log(path, size_mb, matches)`: a kernel log of ordinary boot/runtime lines with a
  few AER and Xid reports spread through it (real wording, from the recorded H200 node and
  the shared corpus).
- `storm_log(path, size_mb)`: an AER storm, a corrected-error report in every 20 lines.
- `large_node_bundle(src, dst, gpus, log_lines)`: a recorded bundle multiplied to `gpus` GPUs
  (NVML snapshot, CSV, topology matrix) with a busy node's kernel log of `log_lines` lines
  (the tests' large-node bundles, `tests/storm/reports.py`).
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import TextIO

ORDINARY = (
    "[{t:12.6f}] nvidia-nvlink: Nvlink Core is being initialized, major device number 240",
    "[{t:12.6f}] mlx5_core 0000:{b:02x}:00.0: mlx5_pcie_event:301:(pid 0): PCIe slot advertised sufficient power (75W).",
    "[{t:12.6f}] EXT4-fs (nvme0n1p2): mounted filesystem with ordered data mode. Quota mode: none.",
    "[{t:12.6f}] IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
    '[{t:12.6f}] audit: type=1400 audit({t:.3f}:217): apparmor="STATUS" operation="profile_load"',
    "[{t:12.6f}] systemd[1]: Started Session 4171 of User ubuntu.",
    "[{t:12.6f}] python3[{p}]: segfault at 0 ip 00007f3a sp 00007ffd error 4 in libc.so.6",
    "[{t:12.6f}] nvme nvme0: I/O 812 QID 7 timeout, completion polled",
)
AER_REPORT = (
    "[{t:12.6f}] pcieport 0000:{b:02x}:01.0: AER: Corrected error message received from 0000:{d:02x}:00.0",
    "[{t:12.6f}] nvidia 0000:{d:02x}:00.0: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)",
    "[{t:12.6f}] nvidia 0000:{d:02x}:00.0:   device [10de:2335] error status/mask=00000001/0000e000",
    "[{t:12.6f}] nvidia 0000:{d:02x}:00.0:    [ 0] RxErr                  (First)",
)
XID = "[{t:12.6f}] NVRM: Xid (PCI:0000:{d:02x}:00): 13, pid={p}, name=python3, Graphics SM Warp Exception on (GPC 2, TPC 1, SM 0): Out Of Range Address"


class _LineWriter:
    """Lines to a file in blocks of 4,096, counting the lines and the bytes written."""

    def __init__(self, out: TextIO) -> None:
        self.out, self.block, self.written, self.lines = out, list[str](), 0, 0

    def add(self, row: str) -> None:
        self.block.append(row)
        self.written += len(row.encode("utf-8")) + 1
        self.lines += 1
        if len(self.block) >= 4096:
            self.flush()

    def flush(self) -> None:
        if self.block:
            self.out.write("\n".join(self.block) + "\n")
            self.block.clear()


def kernel_log(path: Path, size_mb: int, matches: int, seed: int = 7) -> int:
    """Write about `size_mb` MB; returns the number of lines written."""
    rng = random.Random(seed)
    target = size_mb * 1024 * 1024
    t = 5.0
    every = max(target // max(matches, 1), 1)
    next_match = every // 2
    with path.open("w", encoding="utf-8") as out:
        lines = _LineWriter(out)
        while lines.written < target:
            t += 0.0009
            if lines.written >= next_match:
                next_match += every
                report = AER_REPORT if rng.random() < 0.5 else (XID,)
                rows = [r.format(t=t, b=0x16, d=0x19, p=rng.randint(1000, 99999)) for r in report]
            else:
                rows = [
                    rng.choice(ORDINARY).format(
                        t=t, b=rng.randint(0, 255), p=rng.randint(1000, 99999)
                    )
                ]
            for row in rows:
                lines.add(row)
        lines.flush()
    return lines.lines


def large_node_bundle(src: Path, dst: Path, gpus: int, log_lines: int) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, symlinks=False)
    snapshot = json.loads((src / "nvml.json").read_text())
    recorded = snapshot["gpus"]
    grown = []
    for index in range(gpus):
        gpu = json.loads(json.dumps(recorded[index % len(recorded)]))
        gpu["index"] = index
        gpu["pci_bus_id"] = f"0000:{0x18 + 0x10 * index:02x}:00.0"
        gpu["uuid"] = f"GPU-{index:08x}-0000-0000-0000-000000000000"
        grown.append(gpu)
    snapshot["gpus"] = grown
    snapshot["device_count"] = gpus
    snapshot["pairs"] = [
        {"a": a, "b": b, "common_ancestor": "system", "p2p_nvlink": True}
        for a in range(gpus)
        for b in range(a + 1, gpus)
    ]
    (dst / "nvml.json").write_text(json.dumps(snapshot))
    names = [f"GPU{i}" for i in range(gpus)]
    rows = ["\t" + "\t".join([*names, "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"])]
    for a in range(gpus):
        cells = [" X " if a == b else "NV18" for b in range(gpus)]
        rows.append(
            "\t".join(
                [
                    f"GPU{a}",
                    *cells,
                    "0-63" if a < gpus // 2 else "64-127",
                    "0" if a < gpus // 2 else "1",
                    "",
                    "N/A",
                ]
            )
        )
    (dst / "nvidia-smi-topo-m.txt").write_text("\n".join(rows) + "\n")
    listing = "".join(f"GPU {i}: NVIDIA H200 (UUID: {g['uuid']})\n" for i, g in enumerate(grown))
    (dst / "nvidia-smi-L.txt").write_text(listing)
    for name in ("nvidia-smi-query-gpu.csv", "nvidia-smi-dmon.txt", "nvidia-smi-q.txt"):
        (dst / name).unlink(missing_ok=True)
    log_mb = max(1, log_lines * 110 // (1024 * 1024))
    kernel_log(dst / "dmesg.txt", log_mb, matches=200)


def storm_log(path: Path, size_mb: int, every: int = 20, seed: int = 11) -> int:
    """An AER storm: one 4-line corrected report in every `every` lines (the rest ordinary
    boot/runtime lines), about `size_mb` MB; returns the number of reports written."""
    rng = random.Random(seed)
    target = size_mb * 1024 * 1024
    written = reports = 0
    t = 5.0
    with path.open("w", encoding="utf-8") as out:
        while written < target:
            block = []
            for _ in range(every - len(AER_REPORT)):
                t += 0.0009
                block.append(
                    rng.choice(ORDINARY).format(
                        t=t, b=rng.randint(0, 255), p=rng.randint(1000, 99999)
                    )
                )
            t += 0.0009
            block.extend(r.format(t=t, b=0x16, d=0x19 + 0x10 * (reports % 4)) for r in AER_REPORT)
            reports += 1
            text = "\n".join(block) + "\n"
            out.write(text)
            written += len(text.encode("utf-8"))
    return reports
