"""One daemon run against the state directory: load, follow the kernel log, mark, save.

    with DaemonSession(state_dir) as session:          # lock, load (bad file moved aside)
        sources = session.follow(sources)              # kernel log after the cursor
        report = ...run the checks and rules on `sources`...
        report = session.finish(report, now)           # mark, deltas, save atomically

`apply_daemon_state(report, state_dir, now)` is the same without the kernel-log cursor (or
with a `LogFollow` from `filter_since` used by hand).

The state is saved only by `finish`, after the report is complete: a run that dies earlier
leaves the previous state, and the next run reads the same kernel-log lines again (at least
once, never lost). A kernel log not read to its end (its check timed out) keeps the old cursor.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType

from msgspec.structs import replace

from .. import __version__
from ..models import DaemonInfo, Report
from ..sources.base import Sources
from .cursor import KernelCursor, LogFollow
from .deltas import mark_report, stamp
from .follow import FollowedSources, current_boot_id
from .known import last_known, remembered
from .state import (
    DaemonState,
    LastRun,
    LoadedState,
    StateLock,
    load_state,
    save_state,
    state_path,
)


class DaemonSession:
    def __init__(
        self, state_dir: Path, lock_timeout_s: float = 120.0, now: datetime | None = None
    ) -> None:
        self.state_dir = Path(state_dir)
        self._lock = StateLock(self.state_dir, lock_timeout_s)
        self._now = now
        self._loaded: LoadedState | None = None
        self._followed: FollowedSources | None = None

    def open(self) -> DaemonSession:
        self._lock.acquire()
        try:
            self._loaded = load_state(self.state_dir, self._now)
        except BaseException:
            self._lock.release()
            raise
        return self

    def close(self) -> None:
        self._lock.release()

    def __enter__(self) -> DaemonSession:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def previous(self) -> DaemonState | None:
        return self._loaded.state if self._loaded else None

    @property
    def notes(self) -> list[str]:
        return list(self._loaded.notes) if self._loaded else []

    @property
    def cursor(self) -> KernelCursor | None:
        previous = self.previous
        return previous.kernel_cursor if previous else None

    def follow(self, sources: Sources, boot_id: str | None = None) -> FollowedSources:
        """`sources` with the kernel log read after the saved cursor, and the GPUs the state
        remembers of this node (`known.last_known`)."""
        self._require_open()
        boot = boot_id if boot_id is not None else current_boot_id(sources)
        where = str(state_path(self.state_dir))
        known = last_known(self.previous, sources.meta().get("host"), where)
        self._followed = FollowedSources(sources, self.cursor, boot, known)
        return self._followed

    def finish(
        self,
        report: Report,
        now: datetime | None = None,
        follow: LogFollow | None = None,
        boot_id: str | None = None,
    ) -> Report:
        """Mark the report against the previous state and save the new state atomically."""
        self._require_open()
        moment = now or self._now or datetime.now(timezone.utc)
        if follow is None and self._followed is not None:
            follow = self._followed.follow
        if boot_id is None:
            boot_id = follow.boot_id if follow is not None else None
        if boot_id is None and self._followed is not None:
            boot_id = self._followed.boot_id
        previous = self.previous
        windowed = follow is not None and follow.complete
        marked = mark_report(report, previous, moment, boot_id=boot_id, events_windowed=windowed)
        cursor = self._next_cursor(follow)
        notes = self.notes
        if follow is not None and follow.complete and follow.cursor is None and follow.previous:
            notes.append("the kernel log was empty; the cursor was dropped")
        state = DaemonState(
            written_at=stamp(moment),
            sitscheck_version=__version__,
            host=report.host,
            boot_id=boot_id if boot_id is not None else (previous.boot_id if previous else None),
            kernel_cursor=cursor,
            items=marked.items,
            counters=marked.counters,
            last_run=LastRun(
                at=stamp(moment),
                status=report.status,
                exit_code=report.exit_code,
                headline=report.headline,
            ),
            gpus=remembered(report, previous.gpus if previous else []),
        )
        save_state(self.state_dir, state)
        info = DaemonInfo(
            state_dir=str(self.state_dir),
            previous_run=previous.last_run.at if previous and previous.last_run else None,
            kernel_log=follow.describe() if follow is not None else None,
            notes=notes,
        )
        return replace(marked.report, daemon=info)

    def _next_cursor(self, follow: LogFollow | None) -> KernelCursor | None:
        if follow is None or not follow.complete:
            return self.cursor  # the log was not read (to its end): keep the old cursor
        return follow.cursor

    def _require_open(self) -> None:
        if self._loaded is None:
            raise RuntimeError("DaemonSession used before open()")


def apply_daemon_state(
    report: Report,
    state_dir: Path,
    now: datetime,
    follow: LogFollow | None = None,
    boot_id: str | None = None,
) -> Report:
    """Mark `report` new/persisting/cleared against the state in `state_dir`, add counter
    deltas, and save the new state (with `follow`'s cursor when given) atomically."""
    with DaemonSession(state_dir, now=now) as session:
        return session.finish(report, now, follow=follow, boot_id=boot_id)
