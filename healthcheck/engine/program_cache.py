"""Compiled CEL programs kept between runs, by expression text, for one engine build.

Every run compiles the same rule files: the shipped ones hold ~230 distinct expressions, and
compiling them (cel-cpp's parser) and reading each program's syntax tree (`cel_google.shape`)
is about a tenth of a replay's instructions; a program read back (`deserialize`) costs an
eighth of its compiling. Where the engine can serialize its programs, the programs of the
last run are kept in one JSON file of the user's cache folder (`cache_file`), with the shape
of each.

- Only the programs of the last run are written (the file never grows with the runs); it is
  written only when the run compiled an expression it did not hold, or left one unused.
- A program read back is trusted as the rule file it came from is (`cache_file`: the
  user's own folder and file, nobody else may write either). No pickle: programs are the
  engine's own serialized form, base64 in JSON.
- Keyed by the engine's build (its module file's size and modification time): another build
  of the engine never reads what this one wrote.
- Anything wrong with it (absent, unreadable, too large, not this engine's, a program that
  does not read back) costs only the compiling; the file is then written anew. A folder that
  cannot be written (a read-only root, a locked-down unit) costs the same, every run.
"""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from .cache_file import read_json, write_json
from .model import Shape

FORMAT = 1
FILE_NAME = "cel-programs.json"
# a run that compiles more distinct expressions keeps none (the shipped rules hold ~230; a
# generated rule set of thousands would write megabytes every run, and be read back slowly)
MAX_PROGRAMS = 4096


class ProgramCache:
    """The programs kept for one engine build (`engine_id`): `get` what a text compiled to
    in the last run, `put` what it compiles to now, `save` once the rules are loaded."""

    def __init__(self, folder: Path | None, engine_id: str) -> None:
        self._folder = folder
        self._engine = engine_id
        self._damaged = False
        self._too_many = False  # more than MAX_PROGRAMS this run: nothing is written
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
        if len(self._now) >= MAX_PROGRAMS:
            self._too_many = True
            return
        reads = None if shape.reads is None else sorted(list(path) for path in shape.reads)
        self._now[text] = [base64.b64encode(program).decode("ascii"), shape.comprehensions, reads]

    def save(self) -> bool:
        """Write this run's programs where they differ from those read; whether it wrote."""
        if self._folder is None or self._too_many:
            return False
        if not self._damaged and self._now.keys() == self._kept.keys():
            return False
        data = {"format": FORMAT, "engine": self._engine, "programs": self._now}
        if not write_json(self._folder, FILE_NAME, data):
            return False
        self._kept = dict(self._now)
        self._damaged = False
        return True

    def _read(self) -> dict[str, list[Any]]:
        assert self._folder is not None
        data = read_json(self._folder, FILE_NAME)
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
