"""The daemon's state file: versioned JSON in the state directory, written atomically.

`/var/lib/sitscheck/state.json` (or `--state-dir`) holds what the next run compares against:
the kernel-log cursor, the last value of each cumulative counter, the findings and fired
verdicts of the last run (with when each was first seen), the last run's outcome, and the
identity of each GPU the runs have known (`known`: a lost GPU keeps its UUID and model).

- Writes are atomic: a temporary file in the same folder, fsync'd, renamed over the old one,
  then the folder fsync'd. A run killed at any point leaves the old state or the new one;
  a temporary file it left behind is removed by the next run.
- A state file that is not valid JSON (cut off by a tool that wrote it in place, a full disk,
  a hand edit), not a sitscheck state, or of another format version is moved aside
  (`state.json.bad-<UTC time>`, the newest few kept) with a warning, and the run starts from
  no state. It never stops the run.
- One run at a time: a lock file (`flock`) is held from load to save, so a timer run and an
  operator's run do not interleave their reads and writes.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Annotated, Literal

from msgspec import Meta, Struct, field

from ..errors import SitscheckError
from ..models import Device, KnownGpu, Status
from ..printable import printable
from ..reporters.files import write_atomic
from ..sources.files import read_at_most
from ..structs import Invalid, convert, json_text
from .cursor import KernelCursor

log = logging.getLogger("sitscheck.daemon")

STATE_FILE = "state.json"
LOCK_FILE = "state.lock"
STATE_FORMAT: Literal["sitscheck-state"] = "sitscheck-state"
STATE_VERSION = 1
STATE_FILE_MODE = 0o640
KEEP_MOVED_ASIDE = 3
MAX_STATE_BYTES = 64 * 1024 * 1024


class StateError(SitscheckError):
    """The state directory cannot be used (not writable, locked by another run)."""


class TrackedItem(Struct, kw_only=True):
    """A finding or verdict of an earlier run, kept to tell new from persisting and cleared."""

    kind: Literal["finding", "verdict"]
    key: str
    code: Annotated[str, Meta(description="finding code or rule id")]
    check: str | None = None
    device: Device | None = None
    status: Status
    message: str = ""
    event: Annotated[bool, Meta(description="made of kernel-log events: never clears")] = False
    since: str
    last_seen: str


class CounterValue(Struct, kw_only=True):
    """The last value of one cumulative counter (one metric series of one check)."""

    key: str
    check: str
    name: str
    unit: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    value: float
    at: str


class LastRun(Struct, kw_only=True):
    at: str
    status: Status
    exit_code: int
    headline: str


class DaemonState(Struct, kw_only=True):
    """Everything a daemon run keeps for the next one."""

    format: Literal["sitscheck-state"] = STATE_FORMAT
    version: int = STATE_VERSION
    written_at: str | None = None
    sitscheck_version: str | None = None
    host: str | None = None
    boot_id: str | None = None
    kernel_cursor: KernelCursor | None = None
    items: list[TrackedItem] = field(default_factory=list)
    counters: list[CounterValue] = field(default_factory=list)
    last_run: LastRun | None = None
    gpus: Annotated[
        list[KnownGpu], Meta(description="the GPUs' identities as the runs knew them (`known`)")
    ] = field(default_factory=list)


class LoadedState(Struct):
    """The state read (None: first run, or the file was moved aside) and what to tell about it."""

    state: DaemonState | None
    notes: list[str] = field(default_factory=list)


def state_path(state_dir: Path) -> Path:
    return state_dir / STATE_FILE


def load_state(state_dir: Path, now: datetime | None = None) -> LoadedState:
    """Read the state; a file that cannot be used is moved aside with a warning, never raised."""
    path = state_path(state_dir)
    _remove_stale_temporaries(state_dir)
    try:
        with path.open("rb") as handle:
            data = read_at_most(handle, MAX_STATE_BYTES + 1)
    except FileNotFoundError:
        return LoadedState(None)
    except OSError as exc:
        return LoadedState(None, [_set_aside(path, f"unreadable ({exc.strerror or exc})", now)])
    problem = _problem(data)
    if isinstance(problem, str):
        return LoadedState(None, [_set_aside(path, problem, now)])
    return LoadedState(problem)


def _problem(data: bytes) -> DaemonState | str:
    """The state in `data`, or what is wrong with it."""
    if len(data) > MAX_STATE_BYTES:
        return f"larger than {MAX_STATE_BYTES} bytes"
    if not data.strip():
        return "empty"
    try:
        raw = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8 text"
    except json.JSONDecodeError as exc:
        return f"not valid JSON (line {exc.lineno}: {exc.msg}; cut off mid-write?)"
    if not isinstance(raw, dict) or raw.get("format") != STATE_FORMAT:
        return "not a sitscheck state file"
    if raw.get("version") != STATE_VERSION:
        return (
            f"state format version {raw.get('version')!r}, this sitscheck reads version "
            f"{STATE_VERSION}"
        )
    try:
        return convert(raw, DaemonState, strict=False)
    except Invalid as exc:
        return f"does not hold a valid state ({exc})"


def _set_aside(path: Path, problem: str, now: datetime | None) -> str:
    stamp = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    target = path.with_name(f"{path.name}.bad-{stamp.strftime('%Y%m%dT%H%M%S.%fZ')}")
    try:
        os.replace(path, target)
    except OSError as exc:
        raise StateError(
            f"{path}: {problem}, and it cannot be moved aside: {exc.strerror or exc}"
        ) from exc
    _prune_moved_aside(path)
    note = f"state file {path} {problem}: moved aside to {target.name}; starting from no state"
    log.warning("%s", printable(note))
    return note


def _prune_moved_aside(path: Path) -> None:
    moved = sorted(path.parent.glob(f"{path.name}.bad-*"))
    for old in moved[:-KEEP_MOVED_ASIDE]:
        try:
            old.unlink()
        except OSError:
            pass


def _remove_stale_temporaries(state_dir: Path) -> None:
    """Temporary files of a write that was killed before its rename (only under the lock)."""
    for temp in state_dir.glob(f".{STATE_FILE}.*"):
        try:
            temp.unlink()
        except OSError:
            pass


def save_state(state_dir: Path, state: DaemonState) -> None:
    """Write the state atomically: the old file stays whole until the new one replaces it."""
    text = json_text(state, indent=1) + "\n"
    try:
        write_atomic(state_path(state_dir), text, mode=STATE_FILE_MODE)
        _fsync_dir(state_dir)
    except OSError as exc:
        raise StateError(
            f"{state_path(state_dir)}: cannot write the state: {exc.strerror or exc}"
        ) from exc


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError as exc:  # some filesystems refuse fsync on a directory
        if exc.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(fd)


class StateLock:
    """An exclusive `flock` on the state directory's lock file, waited for up to `timeout_s`."""

    def __init__(self, state_dir: Path, timeout_s: float = 120.0, poll_s: float = 0.1) -> None:
        self.state_dir = state_dir
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self._fd: int | None = None

    def acquire(self) -> None:
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o750)
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC  # never a planted link
            fd = os.open(self.state_dir / LOCK_FILE, flags, 0o640)
        except OSError as exc:
            raise StateError(f"state directory {self.state_dir}: {exc.strerror or exc}") from exc
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise StateError(
                        f"state directory {self.state_dir}: another sitscheck run holds its lock "
                        f"(waited {self.timeout_s:g}s)"
                    ) from None
                time.sleep(self.poll_s)
                continue
            self._fd = fd
            return

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> StateLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()
