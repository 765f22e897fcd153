"""Fake commands on a private PATH: `CommandRunner(path=folder)` finds only these."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

HELPERS = Path(__file__).resolve().parent.parent / "helpers"
HANG = HELPERS / "hang.py"


def write_command(folder: Path, name: str, body: str) -> Path:
    """An executable `/bin/sh` script `folder/name` running `body`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body.rstrip("\n") + "\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def hanging_command(folder: Path, name: str, pidfile: Path, ignore_term: bool = False) -> Path:
    """`name` that never returns (tests/helpers/hang.py); its pids go to `pidfile`."""
    flags = " --ignore-term" if ignore_term else ""
    return write_command(
        folder,
        name,
        f"exec {shlex.quote(sys.executable)} -I {shlex.quote(str(HANG))}{flags} "
        f'--pidfile {shlex.quote(str(pidfile))} "$@"',
    )


def printing_command(
    folder: Path, name: str, stdout: str, exit_code: int = 0, stderr: str = ""
) -> Path:
    """`name` that prints fixed text and exits with `exit_code`."""
    body = f"printf '%s' {shlex.quote(stdout)}\n"
    if stderr:
        body += f"printf '%s\\n' {shlex.quote(stderr)} >&2\n"
    body += f"exit {exit_code}\n"
    return write_command(folder, name, body)
