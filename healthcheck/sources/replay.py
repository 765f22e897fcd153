"""Serve a node bundle's files through the `Sources` contract."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import artifacts as names
from .base import Artifact, DriverProbe, KernelLogStream, Memo
from .files import FileTree

_MAX_ARTIFACT = 64 * 1024 * 1024
_NVIDIA_EVIDENCE = (
    names.NVML_JSON,
    names.NVIDIA_SMI_L,
    names.NVIDIA_SMI_Q,
    names.NVIDIA_SMI_QUERY_GPU,
    names.NVIDIA_SMI_TOPO,
    names.NVIDIA_SMI_DMON,
)


class ReplaySources(Memo):
    def __init__(self, bundle: Path, label: str | None = None) -> None:
        super().__init__()
        self._bundle = bundle
        self._label = label or str(bundle)
        self._files = FileTree(bundle, confined=True)
        self._sysfs = FileTree(bundle / names.SYSFS_DIR, confined=True)
        self._procfs = FileTree(bundle / names.PROCFS_DIR, confined=True)
        self._host_files = FileTree(bundle / names.FILES_DIR, confined=True)

    @property
    def mode(self) -> str:
        return "replay"

    @property
    def sysfs(self) -> FileTree:
        return self._sysfs

    @property
    def procfs(self) -> FileTree:
        return self._procfs

    @property
    def files(self) -> FileTree:
        return self._host_files

    def driver(self) -> DriverProbe:
        recorded = self.meta().get("nvidia_driver")
        if isinstance(recorded, dict) and recorded.get("state") in ("absent", "not_loaded"):
            return DriverProbe(recorded["state"], str(recorded.get("detail", "")))
        if any(self._files.exists(name) for name in _NVIDIA_EVIDENCE):
            return DriverProbe("present", "the bundle holds NVIDIA driver evidence")
        return DriverProbe("absent", "the bundle holds no NVIDIA driver evidence")

    def artifact(self, name: str) -> Artifact:
        ref = f"{self._label}/{name}"
        if not self._files.exists(name):
            return Artifact(name, None, ref, reason=f"{name} is not in the bundle")
        text = self._files.read_text(name, limit=_MAX_ARTIFACT + 1)
        if text is None:
            return Artifact(name, None, ref, reason=f"{name} could not be read")
        truncated = len(text) > _MAX_ARTIFACT
        return Artifact(name, text[:_MAX_ARTIFACT], ref, truncated=truncated)

    def kernel_log(self) -> KernelLogStream:
        ref = f"{self._label}/{names.DMESG}"
        path = self._files.path(names.DMESG)
        if path is None or not path.is_file():
            return KernelLogStream(ref, None, f"{names.DMESG} is not in the bundle")
        return KernelLogStream(ref, _stream_lines(path), path=path)

    def gpu_snapshot(self) -> tuple[dict[str, Any] | None, str | None]:
        artifact = self.artifact(names.NVML_JSON)
        if artifact.text is None:
            return None, artifact.reason
        try:
            data = json.loads(artifact.text)
        except json.JSONDecodeError as exc:
            return None, f"{artifact.ref}:{exc.lineno}: not valid JSON: {exc.msg}"
        if not isinstance(data, dict):
            return None, f"{artifact.ref}: not a JSON object"
        from .snapshot_schema import snapshot_problem

        problem = snapshot_problem(data, artifact.ref)
        return (None, problem) if problem else (data, None)

    def log_files(self, folder_name: str) -> list[Path]:
        folder = self._files.path(folder_name)
        if folder is None or not folder.is_dir():
            return []
        found = []
        for path in sorted(folder.rglob("*")):
            if path.suffix in (".log", ".txt") and self._files.path(
                str(path.relative_to(self._bundle))
            ):
                found.append(path)
        return found

    def meta(self) -> dict[str, Any]:
        text = self._files.read_text(names.META_JSON)
        if text is None:
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return {}
        return data if isinstance(data, dict) else {}


def _stream_lines(path: Path) -> Iterator[str]:
    with path.open("r", encoding="utf-8", errors="replace", newline=None) as handle:
        for line in handle:
            yield line.rstrip("\n")
