"""One JSON file in the user's own cache folder, kept between runs (the rules' caches).

The folder is systemd's `$CACHE_DIRECTORY` (a unit's `CacheDirectory=`), else
`$XDG_CACHE_HOME/sitscheck`, else `~/.cache/sitscheck`. What is read back from it is trusted
as the rule files are, so a file is read only where the folder and the file are the user's own
and nobody else may write either (no link followed), and written only there (the folder made
0700, the file 0600, replaced whole). No pickle: plain JSON. Anything wrong (absent, not the
user's, unreadable, too large, not JSON) reads as nothing; a folder that cannot be written
costs only the keeping.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..sources.files import read_at_most

MAX_BYTES = 8 * 1024 * 1024  # a larger file is not read (the shipped rules write ~0.3 MB)


def default_folder(environ: Mapping[str, str] | None = None) -> Path | None:
    """The cache folder (see the module's docstring); None without any of its variables (a
    unit with no home: nothing is kept). Relative paths are ignored."""
    env = os.environ if environ is None else environ
    unit = env.get("CACHE_DIRECTORY", "").split(":")[0]
    if os.path.isabs(unit):
        return Path(unit)
    base = env.get("XDG_CACHE_HOME", "")
    if os.path.isabs(base):
        return Path(base) / "sitscheck"
    home = env.get("HOME", "")
    return Path(home) / ".cache" / "sitscheck" if os.path.isabs(home) else None


def read_json(folder: Path, name: str) -> Any:
    """The JSON value of `folder/name`, or None (see the module's docstring)."""
    try:
        if not _own(folder, create=False):
            return None
        fd = os.open(folder / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or not _private(info) or info.st_size > MAX_BYTES:
                return None
            return json.loads(read_at_most(handle, MAX_BYTES + 1))
    except (OSError, ValueError):
        return None


def write_json(folder: Path, name: str, value: Any) -> bool:
    """Replace `folder/name` with `value` as JSON; whether it could."""
    try:
        if not _own(folder, create=True):
            return False
        handle, temporary = tempfile.mkstemp(prefix=f".{name}-", dir=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(value, out)
            os.replace(temporary, folder / name)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        return False
    return True


def _own(folder: Path, create: bool) -> bool:
    """Whether `folder` is the user's own and nobody else may write it (made, 0700, with
    `create`)."""
    if create:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        info = os.lstat(folder)
    except FileNotFoundError:
        return False
    return stat.S_ISDIR(info.st_mode) and _private(info)


def _private(info: os.stat_result) -> bool:
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


class LastRun:
    """The entries of one cache file: those the last run wrote (read back where the file's
    `header` fields match), and this run's, written only where they differ (an entry added,
    left unused or dropped). A run of more than `limit` entries keeps none."""

    def __init__(
        self,
        folder: Path | None,
        name: str,
        header: dict[str, Any],
        section: str,
        limit: int | None = None,
    ) -> None:
        self._folder, self._name = folder, name
        self._header, self._section, self._limit = header, section, limit
        self.kept: dict[str, Any] = {}
        self._now: dict[str, Any] = {}
        self._changed = False  # an entry dropped: the file is written anew
        self._too_many = False
        data = read_json(folder, name) if folder is not None else None
        if isinstance(data, dict) and all(data.get(k) == v for k, v in header.items()):
            entries = data.get(section)
            self.kept = entries if isinstance(entries, dict) else {}

    def take(self, key: str) -> Any:
        """The entry kept for `key` (None: none), kept for the next run too."""
        entry = self.kept.get(key)
        if entry is not None:
            self._now[key] = entry
        return entry

    def drop(self, key: str) -> None:
        """Forget the entry of `key` (it did not read back)."""
        self.kept.pop(key, None)
        self._now.pop(key, None)
        self._changed = True

    def put(self, key: str, entry: Any) -> None:
        if self._limit is not None and len(self._now) >= self._limit:
            self._too_many = True
            return
        self._now[key] = entry

    def save(self) -> bool:
        """Write this run's entries where they differ from those read; whether it wrote."""
        if self._folder is None or self._too_many:
            return False
        if not self._changed and self._now.keys() == self.kept.keys():
            return False
        if not write_json(self._folder, self._name, {**self._header, self._section: self._now}):
            return False
        self.kept, self._changed = dict(self._now), False
        return True
