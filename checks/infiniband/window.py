"""The two readings of /sys/class/infiniband: at the start and at the end of the window.

Live: the files are read, then read again `sample_seconds` later (the run's sampling window,
as NVML's counters are), each reading on a worker thread under the check's deadline: a sysfs
counter read is a firmware command (a PMA MAD, a Q-counter query), and a wedged HCA can
block it. The wait is cut short so the end reading still fits the deadline; the window is
the measured time between the two readings' midpoints.

Replay: `sysfs/` of the bundle is the first reading, `sysfs-end/` the end one and
`sysfs-end/window_seconds` the time between them (`collect` writes both; an operator can
copy /sys/class/infiniband twice by hand). A bundle without `sysfs-end/` has one reading.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from msgspec import Struct
from sitscheck.contract import CheckContext
from sitscheck.errors import ProbeTimeout
from sitscheck.sources import artifacts as names
from sitscheck.sources.deadline import DeadlineCaller
from sitscheck.sources.files import FileTree

from .check import SYSFS_GLOBS

# Below this the counters' growth says too little to be a rate (nvlink's floor too).
MIN_WINDOW_S = 1.0
_END_MARGIN = 1.0  # seconds kept free after the end reading's expected length (judging, load)


class Reading(Struct, frozen=True):
    """One reading of /sys/class/infiniband: each file's text, when, and how long it took."""

    files: dict[str, str | None]  # path relative to /sys -> text (None: unreadable)
    at: float | None = None  # monotonic midpoint of the reading (live)
    took_s: float = 0.0


class Window(Struct, frozen=True):
    """The start and end readings and the seconds between them, or why there is no end reading."""

    start: Reading
    end: Reading | None
    seconds: float | None
    note: str | None = None  # why there is no end reading


def globbed(tree: FileTree, patterns: Iterable[str] = SYSFS_GLOBS) -> list[str]:
    found: list[str] = []
    for pattern in patterns:
        found.extend(tree.glob(pattern))
    return list(dict.fromkeys(found))


def read(tree: FileTree, paths: Iterable[str] | None = None) -> Reading:
    began = time.monotonic()
    chosen = globbed(tree) if paths is None else list(paths)
    files = {path: tree.read_text(path) for path in chosen}
    ended = time.monotonic()
    return Reading(files, (began + ended) / 2, ended - began)


def live_window(ctx: CheckContext, sample_seconds: float) -> Window:
    """Both readings of the live node; ProbeTimeout when the first cannot be made in time."""
    caller = DeadlineCaller("infiniband-sysfs")
    try:
        sysfs = ctx.sources.sysfs
        start = caller.call(lambda: read(sysfs), ctx.remaining(), "reading /sys/class/infiniband")
        if sample_seconds <= 0:
            return Window(start, None, None, "sample_seconds is 0: the counters were read once")
        assert start.at is not None
        latest = ctx.deadline - start.took_s - _END_MARGIN
        wake = min(start.at + sample_seconds, latest)  # a full window where the deadline allows
        pause = wake - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        paths = list(start.files)
        try:
            end = caller.call(
                lambda: read(sysfs, paths),
                ctx.remaining(),
                "reading /sys/class/infiniband at the window's end",
            )
        except ProbeTimeout as exc:  # a reading that hung: the first one still stands
            return Window(start, None, None, f"the end reading failed: {exc}")
        assert end.at is not None
        return Window(start, end, round(end.at - start.at, 3))
    finally:
        caller.close()


def bundle_window(ctx: CheckContext) -> Window:
    sources = ctx.sources
    start = read(sources.sysfs)
    recorded = sources.artifact(names.SYSFS_WINDOW)
    if recorded.text is None:
        return Window(
            start,
            None,
            None,
            f"the bundle holds one reading ({recorded.reason}): counter growth not judged",
        )
    try:
        seconds = float(recorded.text.strip())
    except ValueError:
        return Window(
            start, None, None, f"{recorded.ref}: {recorded.text.strip()[:40]!r} is not seconds"
        )
    end_files: dict[str, str | None] = {}
    for path in start.files:
        ctx.ensure_time("reading the bundle's sysfs-end/")
        end_files[path] = sources.artifact(f"{names.SYSFS_END_DIR}/{path}").text
    return Window(start, Reading(end_files), seconds)
