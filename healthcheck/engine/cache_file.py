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
            return json.loads(handle.read(MAX_BYTES + 1))
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
