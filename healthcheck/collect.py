"""`sitscheck collect DIR`: record this node's raw evidence as a bundle.

The bundle is plain files under the names in `sources.artifacts` (an operator can assemble
the same by hand) and replays through the same checks with `sitscheck run --from DIR`.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .sources import artifacts as names
from .sources.live import LiveSources
from .sources.pci import DEVICE_FILES, nvidia_gpus, port_folders


def collect_bundle(sources: LiveSources, target: Path) -> dict[str, Any]:
    """Write every piece of evidence; returns a summary of what was written and what failed."""
    target.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"written": [], "missing": {}}
    snapshot, reason = sources.gpu_snapshot()
    if snapshot is not None:
        _write(target / names.NVML_JSON, json.dumps(snapshot, indent=1, default=str), summary)
    else:
        summary["missing"][names.NVML_JSON] = reason
    for name in names.COMMAND_ARTIFACTS:
        artifact = sources.artifact(name)
        if artifact.text is not None:
            _write(target / name, artifact.text, summary)
        else:
            summary["missing"][name] = artifact.reason
    _collect_kernel_log(sources, target, summary)
    _collect_sysfs(sources, target, snapshot, summary)
    _collect_trt(sources, target, summary)
    meta = {
        **sources.meta(),
        "collected_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "missing": summary["missing"],
    }
    _write(target / names.META_JSON, json.dumps(meta, indent=2), summary)
    return summary


def _write(path: Path, text: str, summary: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    summary["written"].append(str(path))


def _collect_kernel_log(sources: LiveSources, target: Path, summary: dict[str, Any]) -> None:
    stream = sources.kernel_log()
    if stream.lines is None:
        summary["missing"][names.DMESG] = stream.reason
        return
    path = target / names.DMESG
    with path.open("w", encoding="utf-8") as out:
        for line in stream.lines:
            out.write(line + "\n")
    summary["written"].append(str(path))
    summary["kernel_log_source"] = stream.ref


def _collect_sysfs(
    sources: LiveSources, target: Path, snapshot: dict[str, Any] | None, summary: dict[str, Any]
) -> None:
    sysfs = sources.sysfs
    bdfs = {g["pci_bus_id"] for g in (snapshot or {}).get("gpus", []) if g.get("pci_bus_id")}
    bdfs.update(nvidia_gpus(sysfs))
    copied = 0
    for bdf in sorted(bdfs):
        for _bus, folder in port_folders(sysfs, bdf) or []:
            for name in DEVICE_FILES:
                text = sysfs.read_text(f"{folder}/{name}")
                if text is not None:
                    out = target / names.SYSFS_DIR / folder / name
                    out.parent.mkdir(parents=True, exist_ok=True)
                    out.write_text(text, encoding="utf-8")
                    copied += 1
    summary["sysfs_files"] = copied


def _collect_trt(sources: LiveSources, target: Path, summary: dict[str, Any]) -> None:
    for number, log in enumerate(sources.trt_logs()):
        out = target / names.TENSORRT_DIR / f"{number:02d}-{log.name}"
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, out)
        summary["written"].append(str(out))
