"""Every thread sitscheck starts, started here: a thread the system refuses is a reason.

Under an address-space limit (`ulimit -v`) or a thread limit, `Thread.start` raises
`RuntimeError: can't start new thread` (each thread reserves its stack, 8 MiB by default).
`start_daemon` raises `CannotStart` instead, a `ProbeError` naming the thread: the check whose
work needed it is UNKNOWN with that reason, and the run still writes its report. What a
caller may do without its thread (run the work itself, go without an optimisation) it does;
what must not outlive a deadline (an NVML call, a check) is then not done, and says so.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any

from .errors import ProbeError


class CannotStart(ProbeError):
    """The system refused a thread: the work it was for did not start."""


def start_daemon(
    target: Callable[..., object], *args: Any, name: str, in_context: bool = False
) -> threading.Thread:
    """A daemon thread running `target(*args)`, started (daemon: one abandoned at a deadline
    never holds up the exit). `in_context`: in a copy of the caller's context, so the deadline
    scope (`sources.scope`) follows the work. Raises CannotStart."""
    if in_context:
        target, args = contextvars.copy_context().run, (target, *args)
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    try:
        thread.start()
    except RuntimeError as exc:  # "can't start new thread": no memory for its stack, or no pid
        raise CannotStart(f"could not start a thread ({name}): {exc}") from None
    return thread
