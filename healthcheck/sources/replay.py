"""Serve a node bundle's files through the `Sources` contract.

Every file is opened without blocking and only if it is a regular file (a FIFO planted as
`meta.json` is refused, named); JSON is read with a bound on its nesting, NaN and Infinity as
"not recorded". What the bundle claims about itself (`meta.json`) never outweighs the evidence
it holds: a bundle with GPU evidence has a driver, whatever its meta.json says.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import artifacts as names
from .base import Artifact, DriverProbe, KernelLogStream, LastKnown, Memo
from .bundle import Unpacked, skipped_reason, unpacked_bundle
from .files import FileTree, bounded_lines, load_json, open_regular

_MAX_ARTIFACT = 64 * 1024 * 1024
_NVIDIA_EVIDENCE = (
    names.NVML_JSON,
    names.NVIDIA_SMI_L,
    names.NVIDIA_SMI_Q,
    names.NVIDIA_SMI_QUERY_GPU,
    names.NVIDIA_SMI_TOPO,
    names.NVIDIA_SMI_DMON,
)


@contextmanager
def replay_sources(location: str, deadline: float | None = None) -> Iterator[ReplaySources]:
    """The sources of a bundle (a folder, or a tarball unpacked until `deadline`)."""
    with unpacked_bundle(location, deadline) as unpacked:
        yield ReplaySources(unpacked.folder, label=location, unpacked=unpacked)


class ReplaySources(Memo):
    def __init__(self, bundle: Path, label: str | None = None, unpacked: Unpacked | None = None):
        super().__init__()
        self._bundle = bundle
        self._label = label or str(bundle)
        self._unpacked = unpacked
        self._meta: tuple[dict[str, Any], str | None] | None = None
        self._files = FileTree(bundle, confined=True)
        # each folder's tree is confined to itself and to the bundle (a `sysfs` that is a
        # link to /sys is no folder of the bundle)
        self._sysfs = FileTree(bundle / names.SYSFS_DIR, confined=True, within=bundle)
        self._procfs = FileTree(bundle / names.PROCFS_DIR, confined=True, within=bundle)
        self._host_files = FileTree(bundle / names.FILES_DIR, confined=True, within=bundle)

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

    @property
    def unfinished(self) -> str | None:
        """Why the bundle was not unpacked whole (the run's deadline came first); else None."""
        return self._unpacked.unfinished if self._unpacked is not None else None

    def driver(self) -> DriverProbe:
        """What the bundle shows of the driver: its NVIDIA outputs, else what the recording
        said (meta.json's `nvidia_driver`, and why each NVIDIA output is missing), else
        `unknown` (nothing shows a driver, nothing says there is none)."""
        evidence = [name for name in _NVIDIA_EVIDENCE if self._files.exists(name)]
        meta, problem = self._read_meta()
        recorded = meta.get("nvidia_driver")
        recorded = recorded if isinstance(recorded, dict) else {}
        claim, said = recorded.get("state"), str(recorded.get("detail", ""))
        if evidence:
            detail = f"the bundle holds NVIDIA driver evidence ({', '.join(evidence)})"
            if claim in ("absent", "not_loaded"):
                detail += f"; its {names.META_JSON} says the driver is {claim} ({said[:200]}),"
                detail += " which that evidence contradicts"
            return DriverProbe("present", detail + (f"; {problem}" if problem else ""))
        if claim in ("absent", "not_loaded"):
            return DriverProbe(claim, said[:500])
        failed = [
            f"{n}: {r}" for n, r in self._recorded_failures().items() if n in _NVIDIA_EVIDENCE
        ]
        if claim == "present" and failed:
            why = "; ".join(failed)[:1000]
            return DriverProbe("present", f"when recorded: {said[:200]}, but {why}")
        detail = "the bundle holds no NVIDIA driver evidence"
        return DriverProbe("unknown", detail + (f"; {problem}" if problem else ""))

    def artifact(self, name: str) -> Artifact:
        ref = f"{self._label}/{name}"
        if not self._files.exists(name):
            skipped = skipped_reason(self._unpacked, name)
            if skipped is not None:  # in the bundle, but left unpacked: a failure to read it
                return Artifact(name, None, ref, reason=skipped)
            failed = self._recorded_failures().get(name)
            if failed is not None:  # it failed when recorded: a failure, as it was live
                return Artifact(name, None, ref, reason=f"{name} was not recorded: {failed}")
            return Artifact(name, None, ref, reason=f"{name} is not in the bundle", absent=True)
        text, problem = self._files.read(name, limit=_MAX_ARTIFACT + 1)
        if text is None:
            return Artifact(name, None, ref, reason=f"{name} could not be read: {problem}")
        truncated = len(text) > _MAX_ARTIFACT
        return Artifact(name, text[:_MAX_ARTIFACT], ref, truncated=truncated)

    def _recorded_failures(self) -> dict[str, str]:
        """Why `collect` could not record each missing output, as meta.json's `missing` says."""
        missing = self._read_meta()[0].get("missing")
        if not isinstance(missing, dict):
            return {}
        return {k: v[:500] for k, v in missing.items() if isinstance(k, str) and isinstance(v, str)}

    def kernel_log(self) -> KernelLogStream:
        ref = f"{self._label}/{names.DMESG}"
        path = self._files.path(names.DMESG)
        if path is None or not path.exists():
            absent = f"{names.DMESG} is not in the bundle"
            why = skipped_reason(self._unpacked, names.DMESG) or absent
            return KernelLogStream(ref, None, why, absent=True)
        try:
            handle = open_regular(path)
        except OSError as exc:  # present but unreadable (a FIFO): UNKNOWN, never skipped
            return KernelLogStream(ref, None, f"{names.DMESG} could not be read: {exc.strerror}")
        return KernelLogStream(ref, _lines_of(handle), path=path)

    def gpu_snapshot(self) -> tuple[dict[str, Any] | None, str | None]:
        artifact = self.artifact(names.NVML_JSON)
        if artifact.text is None:
            return None, artifact.reason
        try:
            data = load_json(artifact.text, not_recorded=_not_recorded)
        except ValueError as exc:  # JSONDecodeError included
            return None, f"{artifact.ref}: not valid JSON: {exc}"
        if not isinstance(data, dict):
            return None, f"{artifact.ref}: not a JSON object"
        from .snapshot_schema import snapshot_problem

        problem = snapshot_problem(data, artifact.ref)
        return (None, problem) if problem else (data, None)

    def log_files(self, folder_name: str) -> list[Path]:
        """Each log under the bundle's `folder_name`, as `<bundle>/<folder_name>/...`: named
        relative to the folder it was found in (the folder's real path), never by comparing a
        real path with the bundle's path as given; one that leads out of the bundle is left out."""
        folder = self._files.path(folder_name)
        if folder is None or not folder.is_dir():
            return []
        found = []
        for path in sorted(folder.rglob("*")):
            # every entry of a log's name, a FIFO or folder too: the check opens each without
            # blocking (`open_regular`) and names what it could not read
            name = f"{folder_name}/{path.relative_to(folder).as_posix()}"
            if path.suffix in (".log", ".txt") and self._files.path(name) is not None:
                found.append(self._bundle / name)
        return found

    def meta(self) -> dict[str, Any]:
        return self._read_meta()[0]

    def last_known(self) -> LastKnown | None:
        return None  # a bundle is judged by what it holds; a daemon run's sources add it

    def _read_meta(self) -> tuple[dict[str, Any], str | None]:
        """meta.json's content ({} when absent or unusable) and what was wrong with it."""
        if self._meta is None:
            self._meta = self._load_meta()
        return self._meta

    def _load_meta(self) -> tuple[dict[str, Any], str | None]:
        if not self._files.exists(names.META_JSON):
            return {}, None
        text, problem = self._files.read(names.META_JSON)
        if text is None:
            return {}, f"{names.META_JSON} could not be read: {problem}"
        try:
            data = load_json(text, not_recorded=_not_recorded)
        except ValueError as exc:
            return {}, f"{names.META_JSON} is not valid JSON ({exc}): ignored"
        if not isinstance(data, dict):
            return {}, f"{names.META_JSON} is not a JSON object: ignored"
        return data, None


def _not_recorded(_constant: str) -> None:
    """NaN, Infinity, -Infinity in a bundle's JSON: no reading, as `null` is."""
    return None


def _lines_of(handle: Any) -> Iterator[str]:
    with handle:
        yield from bounded_lines(handle)
