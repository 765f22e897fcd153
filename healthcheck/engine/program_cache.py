"""Compiled CEL programs kept between runs, by expression text, for one engine build.

Every run compiles the same rule files: the shipped ones hold ~230 distinct expressions, and
compiling them (cel-cpp's parser) and reading each program's syntax tree (`cel_google.shape`)
is about a tenth of a replay's instructions; a program read back (`deserialize`) costs an
eighth of its compiling. Where the engine can serialize its programs, the programs of the
last run are kept in one JSON file in the user's cache folder (`$XDG_CACHE_HOME/sitscheck`,
else `~/.cache/sitscheck`; a systemd unit's `CacheDirectory=`), with the shape of each.

- Only the programs of the last run are written (the file never grows with the runs); it is
  written only when the run compiled an expression it did not hold, or left one unused.
- A program read back is trusted as the rule file it came from is: the folder and the file
  must be the user's own, and nobody else may write either (else the file is not read, and
  not written). No pickle: programs are the engine's own serialized form, base64 in JSON.
- Keyed by the engine's build (its module file's size and modification time): another build
  of the engine never reads what this one wrote.
- Anything wrong with it (absent, unreadable, too large, not this engine's, a program that
  does not read back) costs only the compiling; the file is then written anew. A folder that
  cannot be written (a read-only root, a locked-down unit) costs the same, every run.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .model import Shape

FORMAT = 1
MAX_BYTES = 8 * 1024 * 1024  # a larger file is not read (the shipped rules write ~0.2 MB)
FILE_NAME = "cel-programs.json"


def default_folder(environ: Mapping[str, str] | None = None) -> Path | None:
    """systemd's `$CACHE_DIRECTORY` (a unit's `CacheDirectory=`), else
    `$XDG_CACHE_HOME/sitscheck`, else `~/.cache/sitscheck`; None without any of them (a
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


class ProgramCache:
    """The programs kept for one engine build (`engine_id`): `get` what a text compiled to
    in the last run, `put` what it compiles to now, `save` once the rules are loaded."""

    def __init__(self, folder: Path | None, engine_id: str) -> None:
        self._folder = folder
        self._engine = engine_id
        self._damaged = False
        self._kept: dict[str, list[Any]] = self._read() if folder is not None else {}
        self._now: dict[str, list[Any]] = {}  # the texts of this run, as they will be written

    @property
    def held(self) -> int:
        """How many programs were read back from the file."""
        return len(self._kept)

    def get(self, text: str) -> tuple[bytes, Shape] | None:
        """The serialized program and shape kept for `text`, or None."""
        entry = self._kept.get(text)
        if entry is None:
            return None
        try:
            program = base64.b64decode(entry[0], validate=True)
            reads = entry[2]
            shape = Shape(
                int(entry[1]),
                None if reads is None else frozenset(tuple(str(n) for n in r) for r in reads),
            )
        except (binascii.Error, TypeError, ValueError, IndexError):
            self.drop(text)
            return None
        self._now[text] = entry
        return program, shape

    def drop(self, text: str) -> None:
        """Forget what was kept for `text` (its program did not read back)."""
        self._kept.pop(text, None)
        self._now.pop(text, None)
        self._damaged = True

    def put(self, text: str, program: bytes, shape: Shape) -> None:
        reads = None if shape.reads is None else sorted(list(path) for path in shape.reads)
        self._now[text] = [base64.b64encode(program).decode("ascii"), shape.comprehensions, reads]

    def save(self) -> bool:
        """Write this run's programs where they differ from those read; whether it wrote."""
        if self._folder is None or (not self._damaged and self._now.keys() == self._kept.keys()):
            return False
        try:
            folder = self._own_folder(create=True)
            if folder is None:
                return False
            handle, temporary = tempfile.mkstemp(prefix=".cel-", dir=folder)
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    json.dump(
                        {"format": FORMAT, "engine": self._engine, "programs": self._now}, out
                    )
                os.replace(temporary, folder / FILE_NAME)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError:
            return False
        self._kept = dict(self._now)
        self._damaged = False
        return True

    def _read(self) -> dict[str, list[Any]]:
        try:
            folder = self._own_folder(create=False)
            if folder is None:
                return {}
            fd = os.open(folder / FILE_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as handle:
                info = os.fstat(handle.fileno())
                if not stat.S_ISREG(info.st_mode) or not _private(info) or info.st_size > MAX_BYTES:
                    return {}
                data = json.loads(handle.read(MAX_BYTES + 1))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return {}
        programs = data.get("programs")
        if data.get("engine") != self._engine or not isinstance(programs, dict):
            return {}
        kept = {
            text: entry
            for text, entry in programs.items()
            if isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
        }
        self._damaged = len(kept) != len(programs)  # written anew by `save`, whole
        return kept

    def _own_folder(self, create: bool) -> Path | None:
        """The cache folder where it is the user's own and nobody else may write it (made,
        0700, with `create`); None otherwise."""
        folder = self._folder
        assert folder is not None
        if create:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            info = os.lstat(folder)
        except FileNotFoundError:
            return None
        return folder if stat.S_ISDIR(info.st_mode) and _private(info) else None


def _private(info: os.stat_result) -> bool:
    """Owned by this user, a plain file or folder nobody else may write."""
    return info.st_uid == os.geteuid() and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
