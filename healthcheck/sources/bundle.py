"""Open a node bundle: a directory, or a .tar.gz unpacked safely into a temporary folder.

A tarball member that is absolute, climbs out with `..`, or is a link or device is refused
(the whole bundle, with the member named): a bundle is evidence from a possibly sick or
hostile machine, and unpacking it must not write anywhere else. Unpacking is bounded in bytes
and members (past either the bundle is refused) and in time: at the run's deadline it stops,
and what was not unpacked is named (`Unpacked.unfinished`). A member nested too deep or named
too long to be evidence is skipped, named, and costs nothing else.
"""

from __future__ import annotations

import shutil
import stat
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO

from msgspec import Struct, field

from ..errors import BundleError

MAX_UNPACKED_BYTES = 1024 * 1024 * 1024
MAX_MEMBERS = 20_000  # a 256-GPU bundle has a few thousand (its sysfs copy)
MAX_MEMBER_DEPTH = 64
MAX_MEMBER_NAME = 1024
_COPY_CHUNK = 1024 * 1024
_SHOWN_NAME = 120  # a member's name in a message is cut to this


class Unpacked(Struct):
    """A bundle ready to read: its folder, and what did not make it there."""

    folder: Path
    unfinished: str | None = None  # why unpacking stopped before the end (the deadline)
    skipped: dict[str, str] = field(default_factory=dict)  # member name -> why it was skipped


@contextmanager
def opened_bundle(location: str | Path) -> Iterator[Path]:
    """The bundle's folder (a tarball unpacked whole, no deadline)."""
    with unpacked_bundle(location) as bundle:
        yield bundle.folder


@contextmanager
def unpacked_bundle(location: str | Path, deadline: float | None = None) -> Iterator[Unpacked]:
    """The bundle, a folder as it is or a tarball unpacked until `deadline` (monotonic). The
    folder is its real path, resolved here once: a bundle named by a relative path, through a
    symlink or unpacked under a symlinked TMPDIR reads as the same folder (its real path) that
    every confined tree below it (`files.FileTree`) compares its files' real paths with."""
    path = Path(location)
    if path.is_dir():
        yield Unpacked(path.resolve())
        return
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise BundleError(str(path), "no such bundle (a directory or a .tar.gz)") from None
    except OSError as exc:
        raise BundleError(str(path), f"cannot open: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(mode):
        raise BundleError(str(path), "not a directory and not a regular file; refused")
    if not tarfile.is_tarfile(path):
        raise BundleError(str(path), "not a directory and not a tar archive")
    target = Path(tempfile.mkdtemp(prefix="sitscheck-bundle-")).resolve()
    try:
        unpacked = _unpack(path, target, deadline)
        roots = [p for p in target.iterdir()]
        if len(roots) == 1 and roots[0].is_dir():
            unpacked.folder = roots[0]
            unpacked.skipped = {
                _below(name, roots[0].name): why for name, why in unpacked.skipped.items()
            }
        yield unpacked
    finally:
        shutil.rmtree(target, ignore_errors=True)


def _below(name: str, root: str) -> str:
    return name[len(root) + 1 :] if name.startswith(root + "/") else name


def _unpack(archive: Path, target: Path, deadline: float | None) -> Unpacked:
    unpacked = Unpacked(target)
    total = members = 0
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                members += 1
                if members > MAX_MEMBERS:
                    raise BundleError(
                        str(archive), f"holds more than {MAX_MEMBERS} members; refused"
                    )
                _refuse_unsafe(archive, member)
                total += member.size
                if total > MAX_UNPACKED_BYTES:
                    raise BundleError(str(archive), "unpacks to more than 1 GiB; refused")
                why = _unfit(member.name)
                if why is not None:
                    unpacked.skipped[member.name] = why
                    continue
                if _past(deadline) or not _extract(tar, member, target, deadline):
                    unpacked.unfinished = _stopped(archive, members - 1, total - member.size)
                    return unpacked
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BundleError(str(archive), f"cannot unpack: {_short(str(exc))}") from exc
    return unpacked


def _extract(
    tar: tarfile.TarFile, member: tarfile.TarInfo, target: Path, deadline: float | None
) -> bool:
    """Write one member; False when the deadline came first (what was written is removed)."""
    destination = target / member.name
    if member.isdir():
        destination.mkdir(parents=True, exist_ok=True)
        return True
    destination.parent.mkdir(parents=True, exist_ok=True)
    source = tar.extractfile(member)
    if source is None:
        return True
    with source, destination.open("wb") as out:
        if _copy(source, out, deadline):
            return True
    destination.unlink()
    return False


def _copy(source: IO[bytes], out: IO[bytes], deadline: float | None) -> bool:
    while chunk := source.read(_COPY_CHUNK):
        out.write(chunk)
        if _past(deadline):
            return False
    return True


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _stopped(archive: Path, members: int, size: int) -> str:
    return (
        f"unpacking {archive} stopped at the run's deadline after {members} members "
        f"({size / (1024 * 1024):.0f} MiB): the rest of the bundle was not read"
    )


def _unfit(name: str) -> str | None:
    """Why a member is no evidence sitscheck reads (and is skipped), else None."""
    if len(name) > MAX_MEMBER_NAME:
        return f"its name is longer than {MAX_MEMBER_NAME} characters"
    depth = len(PurePosixPath(name).parts)
    if depth > MAX_MEMBER_DEPTH:
        return f"nested {depth} folders deep (more than {MAX_MEMBER_DEPTH})"
    return None


def _refuse_unsafe(archive: Path, member: tarfile.TarInfo) -> None:
    name = PurePosixPath(member.name)
    shown = _short(member.name)
    if name.is_absolute() or ".." in name.parts:
        raise BundleError(str(archive), f"member {shown!r} leaves the bundle; refused")
    if not (member.isfile() or member.isdir()):
        raise BundleError(str(archive), f"member {shown!r} is a link or device; refused")


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN_NAME else f"{text[:_SHOWN_NAME]}… ({len(text)} characters)"


def skipped_reason(unpacked: Unpacked | None, name: str) -> str | None:
    """Why the member `name` (relative to the bundle's folder) is not there, when it was
    skipped or never reached; None when it simply is not in the bundle."""
    if unpacked is None:
        return None
    if name in unpacked.skipped:
        return f"{_short(name)} was not unpacked: {unpacked.skipped[name]}"
    return unpacked.unfinished
