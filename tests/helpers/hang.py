#!/usr/bin/env python3
"""A command that never finishes: it starts a child that sleeps forever, then sleeps forever.

Used to prove that a timed-out command is killed together with its children.

    hang.py [--ignore-term] [--setsid-child] [--pidfile PATH] [ANY OTHER ARGS ARE IGNORED]

`--pidfile` (or $HANG_PIDFILE) receives one line "PID CHILD_PID" once both are running.
`--ignore-term` (or $HANG_IGNORE_TERM=1) makes both processes ignore SIGTERM, so only a
SIGKILL stops them. `--setsid-child` (or $HANG_SETSID_CHILD=1) starts the child in a session
of its own (`setsid`), out of the command's process group, as a daemonizing tool's helper is.
Unknown arguments are ignored, so the script can stand in for any
command (`nvidia-smi -L`, `dmesg`, ...).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time


def main(argv: list[str]) -> int:
    pidfile = os.environ.get("HANG_PIDFILE")
    ignore_term = os.environ.get("HANG_IGNORE_TERM") == "1"
    own_session = os.environ.get("HANG_SETSID_CHILD") == "1"
    args = iter(argv)
    for arg in args:
        if arg == "--ignore-term":
            ignore_term = True
        elif arg == "--setsid-child":
            own_session = True
        elif arg == "--pidfile":
            pidfile = next(args, None)
    if ignore_term:
        # set before the child starts: an ignored signal stays ignored across exec
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sleep = shutil.which("sleep") or "/bin/sleep"
    child = subprocess.Popen(
        [sleep, "1000000"], stdin=subprocess.DEVNULL, start_new_session=own_session
    )
    if pidfile:
        with open(pidfile, "a", encoding="ascii") as handle:
            handle.write(f"{os.getpid()} {child.pid}\n")
    print("hanging", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
