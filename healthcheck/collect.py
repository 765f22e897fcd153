"""`sitscheck collect DIR`: record this node's raw evidence as a bundle.

What is recorded is what the selected checks declare (`contract.evidence.gather`): their
commands under their file names, the NVML snapshot, the kernel log, sysfs and procfs files
under `sysfs/` and `proc/` (class links read through, stored as plain folders), host files
under `files/`, and declared log files. The bundle is plain files an operator can assemble by
hand, and replays through the same checks with `sitscheck run --from DIR`.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .contract.declarations import resolve
from .contract.evidence import DeclaredEvidence
from .probes.bandwidth import BANDWIDTH_JSON
from .sources import artifacts as names
from .sources.files import FileTree
from .sources.live import LiveSources


def collect_bundle(
    sources: LiveSources, target: Path, declared: DeclaredEvidence
) -> dict[str, Any]:
    """Write every piece of declared evidence; returns what was written and what failed."""
    target.mkdir(parents=True, exist_ok=True)
    summary: dict[str, Any] = {"written": [], "missing": {}}
    if declared.nvml:
        snapshot, reason = sources.gpu_snapshot()
        if snapshot is not None:
            _write(target / names.NVML_JSON, json.dumps(snapshot, indent=1, default=str), summary)
        else:
            summary["missing"][names.NVML_JSON] = reason
    for name in declared.commands:
        artifact = sources.artifact(name)
        if artifact.text is not None:
            _write(target / name, artifact.text, summary)
        else:
            summary["missing"][name] = artifact.reason
    _collect_bandwidth(sources, target, summary)
    if declared.kernel_log:
        _collect_kernel_log(sources, target, summary)
    sysfs_paths = [p for ref in declared.sysfs_paths for p in resolve(ref)(sources)]
    summary["sysfs_files"] = _copy_tree_files(
        sources.sysfs,
        sysfs_paths + _globbed(sources.sysfs, declared.sysfs),
        target / names.SYSFS_DIR,
    )
    summary["proc_files"] = _copy_tree_files(
        sources.procfs, _globbed(sources.procfs, declared.procfs), target / names.PROCFS_DIR
    )
    summary["host_files"] = _copy_tree_files(
        sources.files, _globbed(sources.files, declared.files), target / names.FILES_DIR
    )
    for folder in declared.logs:
        _collect_logs(sources, folder, target, summary)
    meta = {
        **sources.meta(),
        "collected_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "missing": summary["missing"],
    }
    _write(target / names.META_JSON, json.dumps(meta, indent=2), summary)
    return summary


def _collect_bandwidth(sources: LiveSources, target: Path, summary: dict[str, Any]) -> None:
    """After the command outputs (taken while --load still runs): the probe stops the load."""
    if sources.options.bandwidth_s is None:
        return
    artifact = sources.artifact(BANDWIDTH_JSON)
    if artifact.text is not None:
        _write(target / BANDWIDTH_JSON, artifact.text, summary)
    else:
        summary["missing"][BANDWIDTH_JSON] = artifact.reason


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


def _globbed(tree: FileTree, patterns: list[str]) -> list[str]:
    """Paths relative to the tree's root that the patterns match (links read through)."""
    found: list[str] = []
    for pattern in patterns:
        found.extend(tree.glob(pattern))
    return found


def _copy_tree_files(tree: FileTree, relative_paths: list[str], into: Path) -> int:
    """Each readable file, as plain files under `into` at the same relative path."""
    copied = 0
    for relative in dict.fromkeys(relative_paths):
        text = tree.read_text(relative)
        if text is None:
            continue
        out = into / relative.lstrip("/")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        copied += 1
    return copied


def _collect_logs(sources: LiveSources, folder: str, target: Path, summary: dict[str, Any]) -> None:
    for number, log in enumerate(sources.log_files(folder)):
        out = target / folder / f"{number:02d}-{log.name}"
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, out)
        summary["written"].append(str(out))
