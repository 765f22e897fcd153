"""The on-disk spool of OTLP payloads not yet acknowledged by the receiver.

Every payload of a run is written here first (write-ahead), then sent oldest first; a file is
deleted only after the receiver acknowledged it. So across an outage, a crash or a run killed
mid-send nothing is lost, and a payload acknowledged once is never sent again. (A receiver
that accepted a payload but whose answer never arrived gets it again: at least once is the
only promise a plain OTLP receiver allows; span and trace ids are kept, so a backend sees
the same spans.)

One file per payload: `<run time UTC>-<kind>-<destination id>-<random>.otlp`, the serialised
`Export{Trace,Metrics}ServiceRequest` exactly as it is sent, written atomically, mode 0640.
A payload is sent only where it was meant to go: its destination (`Target.destination`: the
signal's URL, or the gRPC authority and signal; never a header, never a user:password) is
kept as `<destination id>.destination`, the id being the first 64 bits of its SHA-256. A
payload whose destination is not configured in a run waits for a run that has it (a one-off
`sitscheck run --otlp X` beside the daemon must not take the daemon's backlog), within the
bounds. Files of the earlier format (no destination) are dropped unsent, with a note.
Bounds: files older than the age limit are dropped before sending; past the count or byte
limit the oldest are dropped. Every drop is counted in `state.json` (cumulative, with the
time the count began) and reported. A lock file keeps two runs from sending the same file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import secrets
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

from msgspec import Struct

from ..sources.files import open_regular

SPOOL_FILE_MODE = 0o640
SUFFIX = ".otlp"
STATE_FILE = "state.json"
LOCK_FILE = ".lock"
KINDS = ("traces", "metrics")
DESTINATION_SUFFIX = ".destination"
_STAMP = r"(\d{8}T\d{6}\.\d{6}Z)-(traces|metrics)"
_NAME = re.compile(rf"^{_STAMP}-([0-9a-f]{{16}})-[0-9a-f]{{8}}\.otlp$")
_OLD_NAME = re.compile(rf"^{_STAMP}-[0-9a-f]{{8}}\.otlp$")  # before destinations: never sent
_STALE_TEMP_S = 3600.0


class SpoolLimits(Struct, frozen=True):
    """The spool's bounds: files, bytes and age; the oldest payloads go first past them."""

    max_files: int
    max_bytes: int
    max_age_s: float


class Entry(Struct, frozen=True):
    """One spooled payload file: its signal (`kind`), the run time in its name, its size, and
    the id of its destination ("" in a file of the earlier format)."""

    path: Path
    kind: str
    run_time: float  # seconds since the epoch, from the file name
    size: int
    destination: str = ""

    @property
    def name(self) -> str:
        return self.path.name


class DropCounts(Struct):
    """Cumulative: payloads dropped by the spool's bounds, or refused for good by a receiver."""

    payloads: int = 0
    bytes: int = 0
    rejected: int = 0
    since: float = 0.0  # when counting began (epoch seconds)


class Spool:
    def __init__(self, directory: Path, limits: SpoolLimits) -> None:
        self.directory = directory
        self.limits = limits

    def open(self) -> None:
        """Create the folder (0750); `OSError` when it cannot be."""
        self.directory.mkdir(mode=0o750, parents=True, exist_ok=True)
        if not os.access(self.directory, os.W_OK | os.X_OK):
            raise PermissionError(f"{self.directory}: not writable")
        if not (self.directory / STATE_FILE).exists():
            self._save(DropCounts(since=time.time()))  # the counters' start time, kept

    def put(self, kind: str, destination: str, body: bytes, run_time_ns: int) -> Entry:
        """Write one payload for `destination` atomically (its destination's record first);
        its name sorts by run time (to the microsecond)."""
        moment = datetime.fromtimestamp(run_time_ns // 10**9, timezone.utc).replace(
            microsecond=(run_time_ns // 1000) % 10**6
        )
        ident = destination_id(destination)
        record = self.directory / f"{ident}{DESTINATION_SUFFIX}"
        if self.destination(ident) != destination:
            _write_atomic(record, destination.encode("utf-8"))
        stamp = moment.strftime("%Y%m%dT%H%M%S.%fZ")
        path = self.directory / f"{stamp}-{kind}-{ident}-{secrets.token_hex(4)}{SUFFIX}"
        _write_atomic(path, body)
        return Entry(path, kind, moment.timestamp(), len(body), ident)

    def destination(self, ident: str) -> str | None:
        """The destination a payload's id stands for; None when its record is gone."""
        try:
            return (self.directory / f"{ident}{DESTINATION_SUFFIX}").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def pending(self) -> list[Entry]:
        """Spooled payloads, oldest first."""
        return self._entries(_NAME)

    def earlier_format(self) -> list[Entry]:
        """Payloads an earlier version spooled without their destination: never sent."""
        return self._entries(_OLD_NAME)

    def _entries(self, pattern: re.Pattern[str]) -> list[Entry]:
        entries = []
        for path in self.directory.iterdir():
            match = pattern.match(path.name)
            if match is None:
                continue
            try:
                size = path.stat().st_size
            except OSError:
                continue
            stamp = datetime.strptime(match.group(1), "%Y%m%dT%H%M%S.%fZ")
            run_time = stamp.replace(tzinfo=timezone.utc).timestamp()
            ident = match.group(3) if pattern.groups >= 3 else ""
            entries.append(Entry(path, match.group(2), run_time, size, ident))
        return sorted(entries, key=lambda e: e.name)

    def read(self, entry: Entry) -> bytes:
        """The payload; a link in its place is not followed (root would send what it names)."""
        with open_regular(entry.path, follow_link=False) as handle:
            return handle.read()

    def remove(self, entry: Entry) -> None:
        with contextlib.suppress(FileNotFoundError):
            entry.path.unlink()

    def expire(self, now: float) -> list[Entry]:
        """Drop payloads older than the age limit (and stale temporary files)."""
        dropped = [e for e in self.pending() if now - e.run_time > self.limits.max_age_s]
        for entry in dropped:
            self.remove(entry)
        for path in self.directory.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                if now - path.stat().st_mtime > _STALE_TEMP_S:
                    path.unlink()
        return dropped

    def forget_destinations(self) -> None:
        """Remove the records of destinations no spooled payload names any more."""
        wanted = {entry.destination for entry in self.pending()}
        for path in self.directory.glob(f"*{DESTINATION_SUFFIX}"):
            if path.name.removesuffix(DESTINATION_SUFFIX) not in wanted:
                with contextlib.suppress(OSError):
                    path.unlink()

    def trim(self) -> list[Entry]:
        """Drop the oldest payloads until the count and byte limits hold."""
        entries = self.pending()
        total = sum(e.size for e in entries)
        dropped = []
        while entries and (len(entries) > self.limits.max_files or total > self.limits.max_bytes):
            oldest = entries.pop(0)
            total -= oldest.size
            self.remove(oldest)
            dropped.append(oldest)
        return dropped

    def counts(self) -> DropCounts:
        try:
            data = json.loads((self.directory / STATE_FILE).read_text(encoding="utf-8"))
            return DropCounts(
                payloads=int(data.get("dropped_payloads", 0)),
                bytes=int(data.get("dropped_bytes", 0)),
                rejected=int(data.get("rejected_payloads", 0)),
                since=float(data.get("since", 0.0)),
            )
        except (OSError, ValueError, TypeError, AttributeError):
            return DropCounts(since=time.time())

    def add_counts(self, dropped: list[Entry], rejected: int) -> DropCounts:
        counts = self.counts()
        if not dropped and not rejected:
            return counts
        counts.payloads += len(dropped)
        counts.bytes += sum(e.size for e in dropped)
        counts.rejected += rejected
        self._save(counts)
        return counts

    def _save(self, counts: DropCounts) -> None:
        state = {
            "dropped_payloads": counts.payloads,
            "dropped_bytes": counts.bytes,
            "rejected_payloads": counts.rejected,
            "since": counts.since,
        }
        _write_atomic(self.directory / STATE_FILE, json.dumps(state, indent=1).encode())

    @contextlib.contextmanager
    def locked(self, wait_s: float) -> Iterator[bool]:
        """True while this process holds the spool; False when another run kept it `wait_s`."""
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC  # never a planted link
        fd = os.open(self.directory / LOCK_FILE, flags, SPOOL_FILE_MODE)
        try:
            give_up = time.monotonic() + wait_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError:
                    if time.monotonic() >= give_up:
                        yield False
                        return
                    time.sleep(0.02)
            try:
                yield True
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def destination_id(destination: str) -> str:
    """A destination's id in file names: 16 hex digits of its SHA-256."""
    return hashlib.sha256(destination.encode("utf-8")).hexdigest()[:16]


def _write_atomic(path: Path, body: bytes) -> None:
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
            handle.flush()
            os.fchmod(handle.fileno(), SPOOL_FILE_MODE)  # the file, never what its name now is
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
