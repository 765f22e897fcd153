"""Read files under a root (`/sys` live, `bundle/sysfs` in a replay), safely and capped.

Opening never blocks: a FIFO (or any file that is not a regular one) planted where evidence is
expected is refused, not waited on (`open_regular`). Lines are read with a bound on each
(`bounded_lines`), and JSON with a bound on its nesting (`load_json`), so a file of any size
or shape costs bounded memory and never a RecursionError.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

MAX_SMALL_FILE = 1024 * 1024
MAX_LINE = 64 * 1024  # the longest line kept; the rest of it is dropped (a log with no breaks)
MAX_JSON_DEPTH = 64
_CHUNK = 1024 * 1024
# what one read of a capped file asks for: below glibc's mmap threshold (128 KiB), so a small
# file's read costs no mapping, and a file is held as it grows, never its cap ahead of it
READ_CHUNK = 64 * 1024


class NotRegularFile(OSError):
    """A path that is there but is not a regular file (a FIFO, a device, a socket)."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"not a regular file ({kind}); refused")
        self.kind = kind
        self.strerror = str(self)


def open_regular(path: str | os.PathLike[str], follow_link: bool = True) -> IO[bytes]:
    """`path` opened for reading in binary, without blocking (a FIFO with no writer would wait
    forever) and only if it is a regular file (sysfs and /proc entries are regular files too);
    without `follow_link`, a symbolic link is refused (ELOOP). Raises OSError: `NotRegularFile`
    for anything else."""
    nofollow = 0 if follow_link else os.O_NOFOLLOW
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | nofollow | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(_kind(mode))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a folder"),
    ):
        if test(mode):
            return name
    return "not a plain file"


def bounded_lines(handle: IO[bytes], limit: int = MAX_LINE) -> Iterator[str]:
    """The lines of a binary stream as UTF-8 text (without their breaks), each cut to `limit`
    bytes: memory stays bounded whatever the line lengths (the same bound as the kernel-log
    chunk scanner keeps for an unterminated line)."""
    tail = b""
    full = False  # `tail` holds `limit` bytes of the current line: the rest of it is dropped
    while chunk := handle.read(_CHUNK):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            yield _text(tail if full else (tail + chunk[start:end])[:limit])
            tail, full, start = b"", False, end + 1
        if not full:
            room = limit - len(tail)
            tail += chunk[start : start + room]
            full = len(chunk) - start >= room
    if tail:
        yield _text(tail)


def read_at_most(handle: IO[bytes], limit: int) -> bytes:
    """At most `limit` bytes of `handle`, read `READ_CHUNK` at a time: the memory taken grows
    with what the file holds. One `handle.read(limit)` allocates all of `limit` before it
    reads a byte: 64 MiB for each 47 KB file of a bundle, a MemoryError under `ulimit -v`."""
    chunks: list[bytes] = []
    left = limit
    while left > 0 and (chunk := handle.read(min(READ_CHUNK, left))):
        chunks.append(chunk)
        left -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _text(line: bytes) -> str:
    return line.removesuffix(b"\r").decode("utf-8", errors="replace")


# A JSON string (escapes included), and what is neither a bracket nor a quote once strings
# are gone: what is left of a document is its brackets, whose nesting is then measured.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth_exceeds(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the document nests arrays/objects more than `limit` deep. In C-speed passes
    (each removes the innermost empty pairs), before any parser recurses into it."""
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    for _ in range(limit):
        shorter = brackets.replace("[]", "").replace("{}", "")
        if shorter == brackets:
            return False  # all nesting resolved, or unbalanced (the parser will say where)
        brackets = shorter
    return bool(brackets) and brackets != brackets.replace("[]", "").replace("{}", "")


def load_json(text: str, not_recorded: Callable[[str], Any] | None = None) -> Any:
    """`json.loads`, refusing a document nested past `MAX_JSON_DEPTH` (ValueError) before it is
    parsed. `not_recorded` receives NaN/Infinity/-Infinity (default: they are kept)."""
    if json_depth_exceeds(text):
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep; not read")
    try:
        if not_recorded is None:
            return json.loads(text)
        return json.loads(text, parse_constant=not_recorded)
    except RecursionError:  # belt and braces: the depth check above should make it impossible
        raise ValueError(f"nested more than {MAX_JSON_DEPTH} levels deep; not read") from None


def _inside(real: str, folder: str) -> bool:
    """Whether the real path `real` is the real folder `folder` or below it."""
    return real == folder or real.startswith(folder.rstrip("/") + "/")


@dataclass(frozen=True, slots=True)
class FileTree:
    """A directory tree addressed by paths relative to its root (`bus/pci/devices/...`).

    `confined` trees (bundles) never follow a path that leaves the root, symlinks included;
    nor, with `within` (the bundle a folder's tree is part of), one whose root itself leads
    out of that folder (a bundle's `sysfs` that is a link to /sys).
    """

    root: Path
    confined: bool = False
    within: Path | None = None
    # the real path of each folder resolved so far (a bundle's folders do not move during a
    # run): a file's path is then resolved by one lstat of its own name, not one per component
    _real_folders: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    def path(self, relative: str) -> Path | None:
        candidate = self.root / relative.lstrip("/")
        if not self.confined:
            return candidate
        try:
            resolved = self._real(str(candidate))
            root = self._real_folder(str(self.root))
            bound = root if self.within is None else self._real_folder(str(self.within))
        except (OSError, RuntimeError, ValueError):
            return None
        inside = _inside(resolved, root) and _inside(root, bound)
        return Path(resolved) if inside else None

    def _real(self, path: str) -> str:
        """`os.path.realpath(path, strict=False)`, with the folders above it remembered."""
        folder, name = os.path.split(path)
        if name in ("", ".", "..") or not folder:
            return os.path.realpath(path)
        joined = os.path.join(self._real_folder(folder), name)
        return os.path.realpath(joined) if os.path.islink(joined) else joined

    def _real_folder(self, folder: str) -> str:
        real = self._real_folders.get(folder)
        if real is None:
            real = self._real_folders[folder] = os.path.realpath(folder)
        return real

    def exists(self, relative: str) -> bool:
        path = self.path(relative)
        return path is not None and path.exists()

    def read_text(self, relative: str, limit: int = MAX_SMALL_FILE) -> str | None:
        """The file's text, or None when it could not be read (absent, unreadable, not a
        regular file, or gone mid-read). A caller that found the folder first tells "vanished"
        from "absent" by asking `exists()` of the folder again (pcie_link's `read_chain` does)."""
        text, _problem = self.read(relative, limit)
        return text

    def read(self, relative: str, limit: int = MAX_SMALL_FILE) -> tuple[str | None, str | None]:
        """(the file's text, None), or (None, why it could not be read)."""
        path = self.path(relative)
        if path is None:
            return None, f"{relative} is not in the tree (it leads out of it)"
        try:
            with open_regular(path) as handle:
                return read_at_most(handle, limit).decode("utf-8", errors="replace"), None
        except OSError as exc:
            return None, f"{relative}: {exc.strerror or exc}"

    def list_dir(self, relative: str) -> list[str]:
        path = self.path(relative)
        if path is None:
            return []
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []

    def glob(self, pattern: str, limit: int = 100_000) -> list[str]:
        """Files under the root matching `pattern` (relative, `*`/`?`/`[...]` per component),
        as relative paths in sorted order; links are followed (a class link's target is read
        under the link's own path); at most `limit` paths."""
        import glob as globbing

        root = str(self.root)
        found: list[str] = []
        for match in globbing.iglob(pattern.lstrip("/"), root_dir=root):
            if self.path(match) is not None and os.path.isfile(os.path.join(root, match)):
                found.append(match)
                if len(found) >= limit:
                    break
        return sorted(found)

    def real_relative(self, relative: str) -> str | None:
        """The path with symlinks resolved, relative to the root (live sysfs device links)."""
        path = self.path(relative)
        if path is None:
            return None
        try:
            resolved = path.resolve()
            return str(resolved.relative_to(self.root.resolve()))
        except (OSError, ValueError, RuntimeError):
            return None
