"""A child process under an address-space limit, as `ulimit -v KIB` sets it, with malloc's
arenas as glibc chooses them unless `env` says otherwise (issue 29, item 9)."""

from __future__ import annotations

import os
import resource
import subprocess
from collections.abc import Sequence

MALLOC_SETTINGS = ("MALLOC_ARENA_MAX", "GLIBC_TUNABLES")


def run_limited(
    argv: Sequence[str],
    limit_kib: int | None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """`argv` run to its end under RLIMIT_AS = `limit_kib` KiB (None: no limit)."""

    def limited() -> None:
        if limit_kib is not None:
            _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
            resource.setrlimit(resource.RLIMIT_AS, (limit_kib * 1024, hard))

    base = {k: v for k, v in os.environ.items() if k not in MALLOC_SETTINGS}
    return subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        preexec_fn=limited,  # the child's own limit, set between fork and exec
        env={**base, **(env or {})},
    )
