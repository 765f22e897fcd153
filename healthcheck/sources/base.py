"""What a check may ask of the node: the `Sources` contract, served live or from a bundle.

Checks reach the host only through this interface, so the same check code runs on a live
node and on a replayed bundle. Every method answers with the evidence or with the reason it
is missing; none raises for an absent input.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from msgspec import Struct

from .files import FileTree

if TYPE_CHECKING:  # the report model loads after a live run's window opens
    from ..models import KnownGpu

T = TypeVar("T")

# present: the NVIDIA kernel module is there (its files, or outputs it gave); absent: no module
# and no nvidia-smi; not_loaded: nvidia-smi but no module; unknown: the evidence neither shows
# a driver nor says there is none (a bundle without NVIDIA outputs or a recorded word on them)
DriverState = Literal["present", "absent", "not_loaded", "unknown"]


class Artifact(Struct, frozen=True):
    """A named piece of evidence: its text, or why there is none."""

    name: str
    text: str | None
    ref: str
    reason: str | None = None
    truncated: bool = False
    timed_out: bool = False  # a live command that did not answer within its deadline (killed)
    absent: bool = False  # not part of this evidence (a bundle without it), not one that failed

    @property
    def available(self) -> bool:
        return self.text is not None


class KernelLogStream(Struct, frozen=True):
    """Where the kernel log came from and its lines (read lazily, once)."""

    ref: str
    lines: Iterator[str] | None
    reason: str | None = None
    path: Path | None = None  # set when the log is a plain file: it can be scanned in chunks
    absent: bool = False  # no log at all (a bundle without one), not one that failed to read


class DriverProbe(Struct, frozen=True):
    """Whether the NVIDIA driver is here (`DriverState`), and what says so."""

    state: DriverState
    detail: str


class LastKnown(Struct, frozen=True):
    """The GPUs an earlier run on this node knew (the daemon's state), and where that is kept."""

    ref: str
    gpus: tuple[KnownGpu, ...] = ()


class Sources(Protocol):
    @property
    def mode(self) -> str: ...

    @property
    def sysfs(self) -> FileTree: ...

    @property
    def procfs(self) -> FileTree: ...

    @property
    def files(self) -> FileTree:
        """Host files by absolute path (a bundle's `files/` folder)."""
        ...

    def driver(self) -> DriverProbe: ...

    def artifact(self, name: str) -> Artifact: ...

    def kernel_log(self) -> KernelLogStream: ...

    def gpu_snapshot(self) -> tuple[dict[str, Any] | None, str | None]:
        """The NVML snapshot (nvml.json's content) or None and the reason."""
        ...

    def log_files(self, folder: str) -> list[Path]:
        """The log files a check declared under `folder` (`LogFilesSpec`): live, the paths its
        run option names; in a bundle, the files of that folder."""
        ...

    def meta(self) -> dict[str, Any]: ...

    def last_known(self) -> LastKnown | None:
        """The GPUs an earlier run on this node knew (a daemon run's state); None otherwise."""
        ...

    def memo(self, key: str, factory: Callable[[], T]) -> T:
        """Evidence derived once per run and shared by checks (e.g. one kernel-log scan)."""
        ...


class Memo:
    """Per-run memo for `Sources.memo`: concurrent callers of one key wait for one factory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self._values: dict[str, Any] = {}

    def memo(self, key: str, factory: Callable[[], T]) -> T:
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            if key not in self._values:
                self._values[key] = factory()
            value: T = self._values[key]
            return value
