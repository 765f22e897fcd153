"""Where a report goes: `--output NAME[=PATH]`, several allowed.

Every reporter is an entry point of group `sitscheck.reporters` (a callable
`render(report, verbose) -> str`), the built-ins registered the same way as a plugin's:
`table` (rich on a TTY, plain text otherwise), `text`, `json`, `junit` (XML for
image-validation pipelines), `npd` (node-problem-detector's one line), `prom=DIR`
(node_exporter's textfile collector: `DIR/sitscheck.prom`, 0644, folders made for it 0755),
`html` (one self-contained page: the verdicts, and an acceptance soak's trace per GPU as
charts).
With `=PATH` the output is written atomically to that file (0640); a reporter that writes a
directory (`prom=DIR`) names its own file inside it. A path that is not a regular file (a
FIFO) is written in place, never past the run's deadline (`files.write_in_place`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from msgspec import Struct

from ..contract.plugins import entry_points
from ..errors import ConfigError, SitscheckError
from ..models import Report
from ..sources.scope import Scope, entered
from .files import write_atomic, write_stream

Renderer = Callable[[Report, bool], str]
REPORTERS_GROUP = "sitscheck.reporters"
# What every output gets to be taken by its reader once the run's deadline has passed: the
# report is still written, and a reader that never reads costs this much at most.
LATE_WRITE_S = 2.0


class OutputSpec(Struct, frozen=True):
    """One `--output NAME[=PATH]`: the reporter's name and the file it writes (None: stdout)."""

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


def deliver(
    report: Report, specs: list[OutputSpec], verbose: bool, run_deadline: float | None = None
) -> None:
    """Every output is attempted; one that cannot be written does not stop the others. No
    write waits on its reader past the run's deadline, or `LATE_WRITE_S` from its own start
    if that is later (so a stalled reader of one output does not cut the next one short)."""
    failures: list[str] = []
    for spec in specs:
        try:
            if run_deadline is None:
                _deliver_one(report, spec, verbose)
            else:  # each output's own scope: one whose reader stalls leaves the next its time
                with entered(Scope(write_deadline(run_deadline))):
                    _deliver_one(report, spec, verbose)
        except OSError as exc:
            where = f"={spec.path}" if spec.path is not None else " (stdout)"
            failures.append(f"--output {spec.name}{where}: {exc.strerror or exc}")
    if failures:
        raise OutputError("; ".join(failures))


def write_deadline(run_deadline: float) -> float:
    return max(run_deadline, time.monotonic() + LATE_WRITE_S)


class OutputError(SitscheckError):
    """Some outputs could not be written (the others were)."""


def _deliver_one(report: Report, spec: OutputSpec, verbose: bool) -> None:
    if spec.name == "prom" and spec.path is not None:
        from .prom import write_prom

        write_prom(report, str(spec.path), verbose)  # node_exporter's textfile dir
        return
    text = renderer_for(spec.name)(report, verbose)
    if spec.path is None:
        write_stream(sys.stdout, text)  # a pipe is written under the deadline too
    else:
        target = spec.path / f"sitscheck.{spec.name}" if spec.path.is_dir() else spec.path
        write_atomic(target, text)
