"""Address space under a limit (`ulimit -v`): spent on the work, not on malloc's reservations.

glibc gives each thread that allocates an arena of its own, up to 8 per core, and each arena
reserves 64 MiB of address space as it is made; RLIMIT_AS counts what is reserved, not what is
used. A replay of a recorded 2-GPU bundle runs 22 threads: on 2 cores its peak was 1.2 GB of
address space for 60 MB resident, and under `ulimit -v 1000000` the arenas left no room for
the next thread's stack (`can't start new thread`) or a module's mapping (MemoryError).

So under a finite RLIMIT_AS the process that is sitscheck caps its arenas at `ARENAS`, as
`MALLOC_ARENA_MAX=2` would (an operator's own setting is kept): the same replay peaks at 290 MB
and gives the same report down to `ulimit -v 300000`. sitscheck's threads allocate holding
the interpreter's lock, so two arenas cost no contention that shows. With no limit, or off
glibc, nothing changes.

Thread stacks (8 MiB each, reserved) are left as they are: 1 MiB stacks would save another
100 MB of that peak, but a recursion as deep as the interpreter allows, through C calls,
overflows a stack of 512 KiB (a crash, and no report) where 8 MiB raises RecursionError.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

ARENAS = 2
M_ARENA_MAX = -8  # mallopt's parameter (glibc's malloc.h)
_OPERATOR_SETTINGS = ("MALLOC_ARENA_MAX", "glibc.malloc.arena_max")


def economise(environ: Mapping[str, str] = os.environ) -> bool:
    """For the process that is sitscheck, before it starts a thread: cap malloc's arenas when
    its address space is limited. Whether it did."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or _set_by_operator(environ) or not _glibc():
        return False
    import ctypes

    try:
        return int(ctypes.CDLL(None).mallopt(M_ARENA_MAX, ARENAS)) == 1
    except (OSError, AttributeError):
        return False


def _set_by_operator(environ: Mapping[str, str]) -> bool:
    tunables = environ.get("GLIBC_TUNABLES", "")
    return _OPERATOR_SETTINGS[0] in environ or _OPERATOR_SETTINGS[1] in tunables


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError):  # not a name this platform knows: not glibc
        return False
