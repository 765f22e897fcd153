"""Where `sitscheck collect` writes a bundle: a folder, or a gzip tarball (`X.tar.gz`, `X.tgz`).

`collect` runs as root into a path the operator names, which other users may be able to write
(a shared folder, `/tmp`). Nothing it writes ever follows a link or overwrites a file it did not
just create: every folder of the bundle is made by this run (`mkdir`, 0700 until it is opened)
and reached again only through descriptors opened `O_NOFOLLOW` whose identity is checked; every
file is created `O_CREAT | O_EXCL | O_NOFOLLOW` relative to its folder's descriptor. A name
that is already there (a link raced in after the emptiness check) stops the collection with an
`WriteError` naming it; its target is never touched. Folders are 0750 and files 0640 whatever
the umask (the kernel log is protected by `dmesg_restrict`; a bundle must not publish it).

A folder bundle is written in place, into a folder this run creates or an empty one. A tarball
is written into a private folder (`mkdtemp`, 0700) first, then packed into a new file beside
the target and linked to the target's name, which never replaces a path that exists; `run
--from X.tar.gz` reads it (one top-level folder, `X`).
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, TextIO

from ..errors import ConfigError, WriteError
from .files import open_regular

FOLDER_MODE = 0o750
FILE_MODE = 0o640
TARBALL_SUFFIXES = (".tar.gz", ".tgz")
_PRIVATE = 0o700  # a folder while it is made: nobody else may enter it before its mode is set
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _parts(relative: str) -> tuple[str, ...]:
    """A bundle path's components; one that would leave its folder is refused."""
    parts = tuple(part for part in relative.split("/") if part not in ("", "."))
    if not parts or ".." in parts:
        raise ValueError(f"not a path inside a bundle: {relative!r}")
    return parts


def _new_folder(parent_fd: int, name: str) -> int:
    """Make folder `name` in `parent_fd` and open it (never a link, never one that was there)."""
    os.mkdir(name, _PRIVATE, dir_fd=parent_fd)
    fd = os.open(name, _FOLDER, dir_fd=parent_fd)
    if os.fstat(fd).st_uid != os.geteuid():  # swapped for another user's folder meanwhile
        os.close(fd)
        raise OSError(errno.EEXIST, "made by another user while collecting", name)
    os.fchmod(fd, FOLDER_MODE)
    return fd


class _Tree:
    """The folders below one root descriptor, each made by this run and reached again only
    through descriptors (`O_NOFOLLOW`), checked to be the very folder it made."""

    def __init__(self, root_fd: int) -> None:
        self.root_fd = root_fd
        self._made: dict[tuple[str, ...], tuple[int, int]] = {}

    def folder(self, parts: tuple[str, ...]) -> int:
        """A new descriptor on the folder `parts` (made where missing); the caller closes it."""
        fd = os.dup(self.root_fd)
        try:
            for depth, name in enumerate(parts, start=1):
                known = self._made.get(parts[:depth])
                child = (
                    _new_folder(fd, name) if known is None else os.open(name, _FOLDER, dir_fd=fd)
                )
                status = os.fstat(child)
                identity = (status.st_dev, status.st_ino)
                os.close(fd)
                fd = child
                if known is not None and identity != known:
                    raise OSError(errno.EEXIST, "replaced by another folder while collecting", name)
                self._made[parts[:depth]] = identity
            return fd
        except BaseException:
            os.close(fd)
            raise

    def create(self, parts: tuple[str, ...]) -> int:
        """A new file's descriptor, open for writing, FILE_MODE."""
        folder = self.folder(parts[:-1])
        try:
            fd = os.open(parts[-1], _NEW_FILE, 0o600, dir_fd=folder)
        finally:
            os.close(folder)
        os.fchmod(fd, FILE_MODE)
        return fd


class BundleWriter:
    """A bundle being written (`open_bundle_writer`). `written` is the bundle's files, relative
    to its root."""

    def __init__(self, target: Path, root_fd: int, staging: Path | None = None) -> None:
        self.target = target
        self.written: list[str] = []
        self._tree = _Tree(root_fd)
        self._staging = staging  # a tarball's private folder

    @property
    def tarball(self) -> bool:
        return self._staging is not None

    def write_text(self, relative: str, text: str) -> None:
        with self.open_text(relative) as out:
            out.write(text)

    @contextmanager
    def open_text(self, relative: str) -> Iterator[TextIO]:
        """A new file of the bundle, open for writing text (UTF-8)."""
        with (
            self._opened(relative) as raw,
            open(raw.fileno(), "w", encoding="utf-8", closefd=False) as out,
        ):
            yield out

    def copy_file(self, relative: str, source: Path) -> None:
        """A copy of `source` (a log the operator named: a regular file) as a new file of the
        bundle."""
        try:
            data = open_regular(source)
        except OSError as exc:
            raise WriteError(f"collect {self.target}: {source}: {exc.strerror or exc}") from None
        with data, self._opened(relative) as out:
            shutil.copyfileobj(data, out)

    @contextmanager
    def _opened(self, relative: str) -> Iterator[BinaryIO]:
        parts = _parts(relative)
        try:
            fd = self._tree.create(parts)
        except OSError as exc:
            raise self._refused(relative, exc) from exc
        with open(fd, "wb") as out:
            yield out
        self.written.append("/".join(parts))

    def _refused(self, relative: str, exc: OSError) -> WriteError:
        if exc.errno in (errno.EEXIST, errno.ELOOP, errno.ENOTDIR):
            why = "is already there (made by another process while collecting); not written"
            return WriteError(f"collect {self.target}: {relative} {why}, collecting stopped")
        return WriteError(f"collect {self.target}: {relative}: {exc.strerror or exc}")

    def close(self) -> None:
        """Let go of the bundle's folder; a tarball's private folder is removed."""
        os.close(self._tree.root_fd)
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)

    def pack(self) -> None:
        """The private folder as a gzip tarball at the target: written to a new file beside
        it, then linked to its name (which fails, never replaces, where a path is there)."""
        assert self._staging is not None
        folder = self.target.parent
        fd, partial = tempfile.mkstemp(prefix=f".{self.target.name}.", dir=folder)
        try:
            os.fchmod(fd, FILE_MODE)
            with open(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
                tar.add(self._staging / _tarball_root(self.target), _tarball_root(self.target))
            os.link(partial, self.target)
        except FileExistsError:
            raise WriteError(
                f"collect {self.target}: made by another process while collecting; not replaced"
            ) from None
        except OSError as exc:
            raise WriteError(f"collect {self.target}: {exc.strerror or exc}") from None
        finally:
            os.unlink(partial)


@contextmanager
def open_bundle_writer(target: Path) -> Iterator[BundleWriter]:
    """The bundle at `target`: a tarball where it ends in .tar.gz/.tgz (a new path), else a
    folder (a new one, or one that is empty); a mistake is a `ConfigError` naming it. Leaving
    the block without an error finishes the bundle (a tarball is packed into place); with one,
    a tarball is not written."""
    try:
        writer = _open(target)
    except OSError as exc:
        raise ConfigError(f"collect {target}: {exc.strerror or exc}") from None
    try:
        yield writer
        if writer.tarball:
            writer.pack()
    finally:
        writer.close()


def check_target(target: Path, label: str = "collect") -> None:
    """What `open_bundle_writer` would refuse at `target`, found now and without writing
    anything: a tarball path that is taken; a folder that is a link, not a folder, or not
    empty; a parent that is not a folder. `accept --collect` asks before its run (a mistake is
    one line then, not the end of a five-minute run); the writer still checks again when it
    opens (a path taken meanwhile is refused there). `label`: the command or option named."""
    try:
        if target.name.endswith(TARBALL_SUFFIXES):
            if os.path.lexists(target):
                raise ConfigError(f"{label} {target}: already exists; give a new tarball path")
        elif os.path.lexists(target):
            os.close(_existing_folder(target, label))
            return
    except OSError as exc:  # not readable: the writer could not use it either
        raise ConfigError(f"{label} {target}: {exc.strerror or exc}") from None
    above = next(p for p in (target.parent, *target.parents) if os.path.lexists(p))
    if not os.path.isdir(above):
        raise ConfigError(f"{label} {target}: {above} is not a folder")


def _open(target: Path) -> BundleWriter:
    if target.name.endswith(TARBALL_SUFFIXES):
        check_target(target)
        _make_parents(target.parent)
        staging = Path(tempfile.mkdtemp(prefix="sitscheck-collect-"))
        try:
            with _opened_folder(staging) as parent:
                return BundleWriter(target, _new_folder(parent, _tarball_root(target)), staging)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return BundleWriter(target, _folder_target(target))


def _tarball_root(target: Path) -> str:
    """The tarball's one top-level folder: its name without the suffix."""
    name = target.name
    for suffix in TARBALL_SUFFIXES:
        name = name.removesuffix(suffix)
    return name or "bundle"


def _folder_target(target: Path) -> int:
    """A descriptor on the bundle's folder: made by this run (its missing parents too), or
    one that exists, is empty and is not a link."""
    if not os.path.lexists(target):
        _make_parents(target.parent)
        with _opened_folder(target.parent) as parent:
            try:
                return _new_folder(parent, target.name)
            except FileExistsError:
                raise ConfigError(f"collect {target}: made by another process meanwhile") from None
    return _existing_folder(target, "collect")


def _existing_folder(target: Path, label: str) -> int:
    """A descriptor on the folder at `target`, which must be empty and not a link."""
    try:
        fd = os.open(target, _FOLDER)
    except OSError as exc:
        # O_NOFOLLOW | O_DIRECTORY on a link: ELOOP, or on Linux ENOTDIR (a link is no folder)
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.islink(target):
            raise ConfigError(
                f"{label} {target}: a symbolic link; give the folder itself"
            ) from None
        if exc.errno == errno.ENOTDIR:
            raise ConfigError(f"{label} {target}: not a folder") from None
        raise
    if os.listdir(fd):
        os.close(fd)
        raise ConfigError(
            f"{label} {target}: the folder is not empty (a bundle of old and new files "
            "would mix two nodes' or two times' evidence); give a new or empty folder"
        )
    return fd


@contextmanager
def _opened_folder(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def _make_parents(folder: Path) -> None:
    """The folders above a bundle that are missing, each made FOLDER_MODE (never a link)."""
    missing = [p for p in (folder, *folder.parents) if not os.path.lexists(p)]
    for level in reversed(missing):
        with _opened_folder(level.parent) as parent:
            try:
                os.close(_new_folder(parent, level.name))
            except FileExistsError:
                if not stat.S_ISDIR(os.stat(level).st_mode):
                    raise
