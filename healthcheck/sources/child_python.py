"""The one way sitscheck starts a Python interpreter: this one again, isolated.

Every child interpreter (the `--load` and `--bandwidth` probes, a check's workload such as
the TensorRT probe) is started here, as

    <sys.executable> -I <this file> MODULE ARGS...      cwd /, an explicit environment

so nothing of the directory the operator stands in, nor of the caller's environment, decides
what code runs as the caller (usually root): `-I` keeps the working directory, the script's
folder, the user's site-packages and every `PYTHON*` variable out of the child's `sys.path`
(a planted `importlib.py` or `sitscheck/` in the working directory is never imported), the
child runs from `/`, and its environment is what a command may inherit
(`command.child_environment`) plus what its caller passes.

How the child finds `sitscheck` (and a plugin's module): it gets the parent's own import path,
the entries of `sys.path` that are absolute folders, in the parent's order
(`SITSCHECK_CHILD_PATH`), and this file, run first, puts them in place before it runs MODULE as
`python -m MODULE` would (`runpy`). So the child imports the very code the parent imported:
an editable install, a plugin found through `PYTHONPATH` or a `--user` install work as in the
parent, though `-I` would drop them. A relative entry (`''` included) names whatever the
working directory is, and is left out: the parent resolved it once, where it was started.

This file is run by path, so at the top it imports the standard library only (the rest
lazily): the child imports nothing before its path is in place.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

    from .command import CommandResult

PATH_VARIABLE = "SITSCHECK_CHILD_PATH"
ISOLATED = "-I"


def available() -> bool:
    """Whether this interpreter can be started again (an embedding program may not say where
    it is)."""
    return bool(sys.executable)


def argv(module: str, *args: str) -> list[str]:
    """The argv that runs `module` (`python -m module args...`) in this interpreter, isolated."""
    return [sys.executable, ISOLATED, os.path.abspath(__file__), module, *args]


def import_path() -> list[str]:
    """The parent's import path as the child gets it: its absolute entries, in order."""
    return [entry for entry in sys.path if os.path.isabs(entry)]


def child_variables(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables a child interpreter gets beyond those every command inherits: `extra`
    (its caller's) and the parent's import path."""
    return {**(extra or {}), PATH_VARIABLE: os.pathsep.join(import_path())}


def start(
    module: str, args: Sequence[str] = (), *, env: Mapping[str, str] | None = None, **popen: Any
) -> subprocess.Popen[Any]:
    """Start `module` as a child interpreter (`subprocess.Popen`'s keywords for its pipes,
    session and descriptors): from `/`, with the environment a command inherits plus `env`.
    Raises OSError when it cannot start."""
    import subprocess

    from .command import WORKING_DIR, child_environment

    environment = {**child_environment(os.environ), **child_variables(env)}
    return subprocess.Popen(
        argv(module, *args), cwd=WORKING_DIR, env=environment, close_fds=True, **popen
    )


def run(
    module: str,
    args: Sequence[str],
    timeout: float,
    *,
    env: Mapping[str, str] | None = None,
    output_cap: int | None = None,
) -> CommandResult:
    """Run `module` as a child interpreter to its end, as `CommandRunner.run` runs a command
    (from `/`, under the caller's deadline, output capped, its process group killed on a
    timeout), with `env` added to what a command inherits."""
    from .command import DEFAULT_OUTPUT_CAP, CommandRunner

    cap = DEFAULT_OUTPUT_CAP if output_cap is None else output_cap
    runner = CommandRunner(output_cap=cap, extra_env=child_variables(env))
    return runner.run(argv(module, *args), timeout)


def _boot() -> None:
    """In the child: the parent's import path in place, then MODULE run as `-m` runs it."""
    import runpy

    given = os.environ.pop(PATH_VARIABLE, "")
    entries = [entry for entry in given.split(os.pathsep) if os.path.isabs(entry)]
    if entries:
        sys.path[:] = entries
    del sys.argv[0]  # this file: MODULE is now argv[0], as -m has it before runpy replaces it
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _boot()
