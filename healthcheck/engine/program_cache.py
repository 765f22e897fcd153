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

from .cache_file import LastRun
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
        header = {"format": FORMAT, "engine": engine_id}
        self._entries = LastRun(folder, FILE_NAME, header, "programs", MAX_PROGRAMS)

    @property
    def held(self) -> int:
        """How many programs were read back from the file."""
        return len(self._entries.kept)

    def get(self, text: str) -> tuple[bytes, Shape] | None:
        """The serialized program and shape kept for `text`, or None."""
        entry = self._entries.take(text)
        if entry is None:
            return None
        try:
            encoded, comprehensions, reads = entry
            program = base64.b64decode(encoded, validate=True)
            shape = Shape(
                int(comprehensions),
                None if reads is None else frozenset(tuple(str(n) for n in r) for r in reads),
            )
        except (binascii.Error, TypeError, ValueError):
            self._entries.drop(text)
            return None
        return program, shape

    def drop(self, text: str) -> None:
        """Forget what was kept for `text` (its program did not read back)."""
        self._entries.drop(text)

    def put(self, text: str, program: bytes, shape: Shape) -> None:
        reads = None if shape.reads is None else sorted(list(path) for path in shape.reads)
        encoded = base64.b64encode(program).decode("ascii")
        self._entries.put(text, [encoded, shape.comprehensions, reads])

    def save(self) -> bool:
        """Write this run's programs where they differ from those read; whether it wrote."""
        return self._entries.save()
