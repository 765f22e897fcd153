"""Where a report goes: `--output NAME[=PATH]`, several allowed.

Every reporter is an entry point of group `sitscheck.reporters` (a callable
`render(report, verbose) -> str`), the built-ins registered the same way as a plugin's:
`table` (rich on a TTY, plain text otherwise), `text`, `json`, `junit` (XML for
image-validation pipelines), `npd` (node-problem-detector's one line), `prom=DIR`
(node_exporter's textfile collector: `DIR/sitscheck.prom`, 0644).
With `=PATH` the output is written atomically to that file (0640); a reporter that writes a
directory (`prom=DIR`) names its own file inside it.
"""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..contract.plugins import entry_points
from ..errors import ConfigError, SitscheckError
from ..models import Report

Renderer = Callable[[Report, bool], str]
REPORT_FILE_MODE = 0o640
REPORTERS_GROUP = "sitscheck.reporters"


@dataclass(frozen=True, slots=True)
class OutputSpec:
    name: str
    path: Path | None = None


def parse_outputs(values: list[str]) -> list[OutputSpec]:
    specs = []
    for value in values or ["table"]:
        name, _, path = value.partition("=")
        name = name.strip().lower()
        if not name:
            raise ConfigError(f"--output {value!r}: expected NAME or NAME=PATH")
        renderer_for(name)  # refuse unknown names before the run starts
        specs.append(OutputSpec(name, Path(path) if path else None))
    return specs


def renderer_for(name: str) -> Renderer:
    """The reporter registered under `name` (entry-point group `sitscheck.reporters`)."""
    reporters = entry_points(REPORTERS_GROUP)
    for entry in reporters:
        if entry.name == name:
            try:
                loaded: Renderer = entry.load()
            except Exception as exc:
                raise ConfigError(
                    f"output {name!r}: reporter {entry.value} failed to load: {exc}"
                ) from exc
            return loaded
    known = sorted({e.name for e in reporters})
    raise ConfigError(f"unknown output {name!r} (known: {', '.join(known)})")


def deliver(report: Report, specs: list[OutputSpec], verbose: bool) -> None:
    """Every output is attempted; one that cannot be written does not stop the others."""
    failures: list[str] = []
    for spec in specs:
        try:
            _deliver_one(report, spec, verbose)
        except OSError as exc:
            failures.append(f"--output {spec.name}={spec.path}: {exc.strerror or exc}")
    if failures:
        raise OutputError("; ".join(failures))


class OutputError(SitscheckError):
    """Some outputs could not be written (the others were)."""


def _deliver_one(report: Report, spec: OutputSpec, verbose: bool) -> None:
    if spec.name == "prom" and spec.path is not None:
        from .prom import write_prom

        write_prom(report, str(spec.path), verbose)  # node_exporter's textfile dir
        return
    text = renderer_for(spec.name)(report, verbose)
    if spec.path is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        target = spec.path / f"sitscheck.{spec.name}" if spec.path.is_dir() else spec.path
        write_atomic(target, text)


def write_atomic(path: Path, text: str, mode: int = REPORT_FILE_MODE) -> None:
    """Write a regular file by rename, so readers never see half a report; a path that is not
    a regular file (`/dev/null`, a FIFO, `/dev/stdout`) is written to in place, never replaced."""
    if path.exists() and not path.is_file():
        with os.fdopen(_open_in_place(path), "w", encoding="utf-8") as handle:
            handle.write(text)
        return
    _make_folders(path.parent)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with_suppressed_unlink(temp)
        raise


def _open_in_place(path: Path) -> int:
    """Open a path that is not a regular file for writing without blocking: a FIFO no one
    reads is refused (ENXIO) rather than waited on forever; writes then block as usual."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(
                exc.errno, "a FIFO that no process reads; not written", str(path)
            ) from None
        raise
    os.set_blocking(fd, True)
    return fd


def with_suppressed_unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _make_folders(folder: Path) -> None:
    """Create missing folders one level at a time, each 0750 whatever the umask."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    for level in reversed(missing):
        level.mkdir(exist_ok=True)
        os.chmod(level, 0o750)
