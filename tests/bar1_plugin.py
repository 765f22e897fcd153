"""The second example plugin (examples/plugins/bar1_memory) as the main suite uses it: its
folder, its recorded bundle, and how that bundle was recorded.

The plugin reads one NVML value no built-in check reads (`nvmlDeviceGetBAR1MemoryInfo`). Its
bundle was recorded by `sitscheck collect` (the plugin alone selected) on the fake node of the
fault suite (`tests/faults/fault_node.py`: the 2×H200 node of `tests/bundles/h200x2-idle-v0`),
whose fake NVML replayed that node's nvml.json with each GPU's BAR1 reading added as the
node's own `nvidia-smi -q` printed it (`recording`): `record(python, out)` does it again.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from corpus_paths import REPO_ROOT

PLUGIN = REPO_ROOT / "examples" / "plugins" / "bar1_memory"
SRC = PLUGIN / "src"
RULES = SRC / "sitscheck_bar1_memory" / "rules"
BUNDLE = PLUGIN / "tests" / "bundles" / "h200x2-fake-node"
NODE = REPO_ROOT / "tests" / "bundles" / "h200x2-idle-v0"  # the fake node's (fault_node.BUNDLE)
LAUNCHER = REPO_ROOT / "tests" / "faults" / "fault_node.py"
KEY = "bar1_memory"  # the plugin's declared NVML key (its check.py)
MIB = 1 << 20

_GPU = re.compile(r"GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_ROW = re.compile(r"\s+(Total|Used|Free)\s+:\s+(\d+) MiB\s*$")
_NVML_FIELDS = {"Total": "bar1Total", "Free": "bar1Free", "Used": "bar1Used"}


def bar1_by_bus(smi_q: str) -> dict[str, dict[str, int]]:
    """Each GPU's `BAR1 Memory Usage` in `nvidia-smi -q` text, as NVML's nvmlBAR1Memory_t
    (bytes), by NVML's bus id (`00000000:19:00.0`, upper case)."""
    found: dict[str, dict[str, int]] = {}
    bus: str | None = None
    rows: dict[str, int] | None = None
    for line in smi_q.splitlines():
        gpu = _GPU.match(line)
        if gpu is not None:
            bus, rows = gpu.group(1).upper(), None
            continue
        if line.strip() == "BAR1 Memory Usage" and bus is not None:
            rows = found.setdefault(bus, {})
            continue
        row = _ROW.match(line) if rows is not None else None
        if row is None:
            rows = None
            continue
        assert rows is not None
        rows[_NVML_FIELDS[row.group(1)]] = int(row.group(2)) * MIB
    return found


def recording(node: Path = NODE) -> dict[str, Any]:
    """The node's nvml.json, each GPU with its BAR1 reading (from its nvidia-smi -q) under the
    plugin's key: what the fake NVML answers `nvmlDeviceGetBAR1MemoryInfo` with."""
    data: dict[str, Any] = json.loads((node / "nvml.json").read_text(encoding="utf-8"))
    by_bus = bar1_by_bus((node / "nvidia-smi-q.txt").read_text(encoding="utf-8"))
    for gpu in data["gpus"]:
        domain, _, rest = gpu["pci_bus_id"].partition(":")
        gpu[KEY] = by_bus[f"{domain.zfill(8)}:{rest}".upper()]
    return data


def record(python: Path, out: Path, work: Path) -> subprocess.CompletedProcess[str]:
    """`sitscheck collect OUT` with only the plugin selected, run by `python` (where sitscheck
    and the plugin are installed) on the fake node (made under `work`)."""
    import sys

    faults = str(LAUNCHER.parent)
    if faults not in sys.path:
        sys.path.insert(0, faults)
    from fault_node import make_node

    spec = make_node(work)
    given = work / "nvml-with-bar1.json"
    given.write_text(json.dumps(recording()), encoding="utf-8")
    spec.nvml.recording = str(given)
    config = work / "config.yaml"
    config.write_text("checks: [bar1_memory]\n", encoding="utf-8")
    argv = [str(python), str(LAUNCHER), str(spec.write()), "collect", str(out)]
    return subprocess.run(
        [*argv, "--config", str(config)], capture_output=True, text=True, timeout=120, check=False
    )
