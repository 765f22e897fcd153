"""`python -m sitscheck`, and the `sitscheck` command's entry point.

Signal handlers come first, before the command line and its imports (a fifth of a second):
a SIGTERM during start-up is held for the run, which then ends at once with its report, and
never kills the process with no report at all (`interrupt.own_process`).
"""

from __future__ import annotations


def main() -> None:
    from .interrupt import own_process

    own_process()
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
