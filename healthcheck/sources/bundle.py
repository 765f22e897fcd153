"""Open a node bundle: a directory, or a .tar.gz unpacked safely into a temporary folder.

A tarball member that is absolute, climbs out with `..`, or is a link or device is refused
(the whole bundle, with the member named): a bundle is evidence from a possibly sick or
hostile machine, and unpacking it must not write anywhere else.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from ..errors import BundleError

MAX_UNPACKED_BYTES = 4 * 1024 * 1024 * 1024


@contextmanager
def opened_bundle(location: str | Path) -> Iterator[Path]:
    path = Path(location)
    if path.is_dir():
        yield path
        return
    if not path.exists():
        raise BundleError(str(path), "no such bundle (a directory or a .tar.gz)")
    if not tarfile.is_tarfile(path):
        raise BundleError(str(path), "not a directory and not a tar archive")
    target = Path(tempfile.mkdtemp(prefix="sitscheck-bundle-"))
    try:
        _unpack(path, target)
        roots = [p for p in target.iterdir()]
        yield roots[0] if len(roots) == 1 and roots[0].is_dir() else target
    finally:
        shutil.rmtree(target, ignore_errors=True)


def _unpack(archive: Path, target: Path) -> None:
    total = 0
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                _refuse_unsafe(archive, member)
                total += member.size
                if total > MAX_UNPACKED_BYTES:
                    raise BundleError(str(archive), "unpacks to more than 4 GiB; refused")
                if member.isdir():
                    (target / member.name).mkdir(parents=True, exist_ok=True)
                    continue
                destination = target / member.name
                destination.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is None:
                    continue
                with source, destination.open("wb") as out:
                    shutil.copyfileobj(source, out)
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BundleError(str(archive), f"cannot unpack: {exc}") from exc


def _refuse_unsafe(archive: Path, member: tarfile.TarInfo) -> None:
    name = PurePosixPath(member.name)
    if name.is_absolute() or ".." in name.parts:
        raise BundleError(str(archive), f"member {member.name!r} leaves the bundle; refused")
    if not (member.isfile() or member.isdir()):
        raise BundleError(str(archive), f"member {member.name!r} is a link or device; refused")
