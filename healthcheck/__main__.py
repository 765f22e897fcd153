"""`python -m sitscheck`, and the `sitscheck` command's entry point.

Signal handlers come first, before the command line and its imports (a fifth of a second):
a SIGTERM during start-up is held for the run, which then ends at once with its report, and
never kills the process with no report at all (`interrupt.own_process`). A command that is
not a run gets the usual signals back once it is known. Under an address-space limit, malloc's
arenas are capped before any thread starts (`address_space.economise`).

At the end, every object left is frozen out of the cyclic garbage collector (`gc.freeze`):
the interpreter's teardown then skips its last collections over everything a run imported
and built (~0.1 s of a 0.8 s replay on 2 cores). What sitscheck writes is written and closed
before (outputs, state, spool); exit handlers still run.
"""

from __future__ import annotations

import gc
import sys

# the commands that take a held signal (no command at all is a run)
RUNS = ("run", "daemon", "accept")


def main() -> None:
    from .address_space import economise
    from .interrupt import own_process, release_held

    own_process()
    economise()
    from .cli import main as cli_main

    if command(sys.argv[1:]) not in RUNS:
        release_held()
    try:
        cli_main()
    finally:
        gc.freeze()


def command(args: list[str]) -> str:
    """The subcommand named on the command line (options before it are the group's own)."""
    return next((arg for arg in args if not arg.startswith("-")), "run")


if __name__ == "__main__":
    main()
