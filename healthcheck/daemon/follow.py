"""Sources whose kernel log starts after the daemon's cursor; the current boot id.

`FollowedSources(inner, cursor, boot_id, known)` serves everything `inner` serves, except that
`kernel_log()` yields only the lines after `cursor` (see `cursor.filter_since`), and
`last_known()` the GPUs the state remembers (`known`). Checks see a smaller log and report
only what is new; `follow` says how the log was read and holds the new cursor once the scan
has read the log to its end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..sources.base import Artifact, DriverProbe, KernelLogStream, LastKnown, Memo, Sources
from ..sources.files import FileTree
from .cursor import KernelCursor, LogFollow, filter_since

BOOT_ID_PATH = Path("/proc/sys/kernel/random/boot_id")


def current_boot_id(sources: Sources, path: Path = BOOT_ID_PATH) -> str | None:
    """The boot id of the node the sources describe: a bundle's meta.json `boot_id`, or the
    running kernel's for a live node; None when unknown."""
    recorded = sources.meta().get("boot_id")
    if isinstance(recorded, str) and recorded.strip():
        return recorded.strip()
    if sources.mode != "live":
        return None
    return read_boot_id(path)


def read_boot_id(path: Path = BOOT_ID_PATH) -> str | None:
    try:
        text = path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:
        return None
    return text or None


class FollowedSources(Memo):
    """`inner` with its kernel log read from `cursor` on. Its own per-run memo."""

    def __init__(
        self,
        inner: Sources,
        cursor: KernelCursor | None,
        boot_id: str | None = None,
        known: LastKnown | None = None,
    ) -> None:
        super().__init__()
        self.inner = inner
        self.previous = cursor
        self.boot_id = boot_id
        self.known = known
        self._follows: list[LogFollow] = []

    @property
    def follow(self) -> LogFollow | None:
        """The read that went to the end of the log (the last one), else the first begun."""
        complete = [f for f in self._follows if f.complete]
        if complete:
            return complete[-1]
        return self._follows[0] if self._follows else None

    @property
    def mode(self) -> str:
        return self.inner.mode

    @property
    def unfinished(self) -> str | None:
        """The inner sources' (a bundle not unpacked whole before the run's deadline)."""
        why = getattr(self.inner, "unfinished", None)
        return why if isinstance(why, str) else None

    @property
    def sysfs(self) -> FileTree:
        return self.inner.sysfs

    def driver(self) -> DriverProbe:
        return self.inner.driver()

    def artifact(self, name: str) -> Artifact:
        return self.inner.artifact(name)

    def kernel_log(self) -> KernelLogStream:
        stream = self.inner.kernel_log()
        if stream.lines is None:
            return stream
        lines, follow = filter_since(stream.lines, self.previous, self.boot_id, stream.ref)
        self._follows.append(follow)
        return KernelLogStream(stream.ref, lines, stream.reason)

    def gpu_snapshot(self) -> tuple[dict[str, Any] | None, str | None]:
        return self.inner.gpu_snapshot()

    @property
    def procfs(self) -> FileTree:
        return self.inner.procfs

    @property
    def files(self) -> FileTree:
        return self.inner.files

    def log_files(self, folder: str) -> list[Path]:
        return self.inner.log_files(folder)

    def meta(self) -> dict[str, Any]:
        return self.inner.meta()

    def last_known(self) -> LastKnown | None:
        return self.known
