"""`sitscheck collect DIR`: record this node's raw evidence as a bundle.

What is recorded is what the selected checks declare (`contract.evidence.gather`): their
commands under their file names, the NVML snapshot, the kernel log, sysfs and procfs files
under `sysfs/` and `proc/` (class links read through, stored as plain folders), host files
under `files/`, and declared log files. The bundle is plain files an operator can assemble by
hand, and replays through the same checks with `sitscheck run --from DIR`.

Every file is written through a `BundleWriter` (`bundle_writer`): never through a link, never
over a file it did not create, 0640 in folders 0750; the bundle is a folder or a gzip tarball.

The declared sysfs globs are read twice, at the start and at the end of the sampling window
(`sample_seconds`, counted from before the NVML snapshot), so a check can difference the
counters among them: `sysfs/` holds the first reading, `sysfs-end/` the same paths read at the
end and `sysfs-end/window_seconds` the seconds between the two readings' midpoints.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from typing import Any

from msgspec import Struct

from ..contract.declarations import resolve
from ..contract.evidence import DeclaredEvidence
from . import artifacts as names
from .bundle_writer import BundleWriter
from .files import FileTree
from .live import LiveSources
from .pci import GPU_DRIVERS, gpu_drivers


def collect_bundle(
    sources: LiveSources, out: BundleWriter, declared: DeclaredEvidence
) -> dict[str, Any]:
    """Write every piece of declared evidence; returns what was written (`written`: the
    bundle's files, relative to its root) and what failed."""
    summary: dict[str, Any] = {"written": out.written, "missing": {}}
    first = _read_files(sources.sysfs, _globbed(sources.sysfs, declared.sysfs))
    if declared.nvml:
        snapshot, reason = sources.gpu_snapshot()
        if snapshot is not None:
            out.write_text(names.NVML_JSON, json.dumps(snapshot, indent=1, default=str))
        else:
            summary["missing"][names.NVML_JSON] = reason
    for name in declared.commands:
        artifact = sources.artifact(name)
        if artifact.text is not None:
            out.write_text(name, artifact.text)
        else:
            summary["missing"][name] = artifact.reason
    if first.texts:
        _collect_sysfs_end(sources, out, first)
    _collect_bandwidth(sources, out, summary)
    if declared.kernel_log:
        _collect_kernel_log(sources, out, summary)
    sysfs_paths = [p for ref in declared.sysfs_paths for p in resolve(ref)(sources)]
    copied = _write_tree(out, first.texts, names.SYSFS_DIR)
    copied += _copy_tree_files(out, sources.sysfs, sysfs_paths, names.SYSFS_DIR, set(first.texts))
    summary["sysfs_files"] = copied
    summary["proc_files"] = _copy_tree_files(
        out, sources.procfs, _globbed(sources.procfs, declared.procfs), names.PROCFS_DIR
    )
    summary["host_files"] = _copy_tree_files(
        out, sources.files, _globbed(sources.files, declared.files), names.FILES_DIR
    )
    for folder in declared.logs:
        for number, log in enumerate(sources.log_files(folder)):
            out.copy_file(f"{folder}/{number:02d}-{log.name}", log)
    meta = {
        **sources.meta(),
        "collected_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "missing": summary["missing"],
        GPU_DRIVERS: gpu_drivers(sources),  # the driver bound to each GPU: sysfs links, not kept
    }
    out.write_text(names.META_JSON, json.dumps(meta, indent=2))
    return summary


def _collect_bandwidth(sources: LiveSources, out: BundleWriter, summary: dict[str, Any]) -> None:
    """After the command outputs (taken while --load still runs): the probe stops the load."""
    if sources.options.bandwidth_s is None:
        return
    artifact = sources.artifact(names.BANDWIDTH_JSON)
    if artifact.text is not None:
        out.write_text(names.BANDWIDTH_JSON, artifact.text)
    else:
        summary["missing"][names.BANDWIDTH_JSON] = artifact.reason


def _collect_kernel_log(sources: LiveSources, out: BundleWriter, summary: dict[str, Any]) -> None:
    stream = sources.kernel_log()
    if stream.lines is None:
        summary["missing"][names.DMESG] = stream.reason
        return
    with out.open_text(names.DMESG) as log:
        for line in stream.lines:
            log.write(line + "\n")
    summary["kernel_log_source"] = stream.ref


def _globbed(tree: FileTree, patterns: list[str]) -> list[str]:
    """Paths relative to the tree's root that the patterns match (links read through)."""
    found: list[str] = []
    for pattern in patterns:
        found.extend(tree.glob(pattern))
    return found


def _copy_tree_files(
    out: BundleWriter,
    tree: FileTree,
    relative_paths: list[str],
    into: str,
    skip: set[str] | None = None,
) -> int:
    """Each readable file, as plain files under `into` at the same relative path."""
    wanted = [p for p in dict.fromkeys(relative_paths) if p not in (skip or set())]
    return _write_tree(out, _read_files(tree, wanted).texts, into)


class _Reading(Struct):
    """One reading of a file tree: the texts of its readable files and when it was read."""

    texts: dict[str, str]  # relative path -> text, readable files only
    at: float  # monotonic midpoint of the reading


def _read_files(tree: FileTree, relative_paths: list[str]) -> _Reading:
    began = time.monotonic()
    texts: dict[str, str] = {}
    for relative in dict.fromkeys(relative_paths):
        text = tree.read_text(relative)
        if text is not None:
            texts[relative] = text
    return _Reading(texts, (began + time.monotonic()) / 2)


def _write_tree(out: BundleWriter, texts: dict[str, str], into: str) -> int:
    for relative, text in texts.items():
        out.write_text(f"{into}/{relative.lstrip('/')}", text)
    return len(texts)


def _collect_sysfs_end(sources: LiveSources, out: BundleWriter, first: _Reading) -> None:
    """The first reading's files read again once the sampling window has passed."""
    pause = first.at + sources.options.sample_seconds - time.monotonic()
    if pause > 0:
        time.sleep(pause)
    end = _read_files(sources.sysfs, list(first.texts))
    _write_tree(out, end.texts, names.SYSFS_END_DIR)
    out.write_text(names.SYSFS_WINDOW, f"{end.at - first.at:.3f}\n")
