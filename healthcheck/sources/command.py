"""Run external commands safely: argv only, a timeout that kills the process group.

Every command sitscheck runs goes through `CommandRunner.run`. No shell ever; `LC_ALL=C` so
the output is in the form the parsers know; output captured through temporary files and
capped, so a runaway command costs neither a pipe deadlock nor unbounded memory. On timeout
the whole process group gets SIGKILL; a process stuck in the kernel (D state) that does not
die is abandoned after a short grace, never waited on forever.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO

DEFAULT_OUTPUT_CAP = 16 * 1024 * 1024
_REAP_GRACE_S = 1.0


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    truncated: bool = False
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out and self.returncode == 0

    @property
    def display(self) -> str:
        return " ".join(self.argv)

    def failure_reason(self) -> str | None:
        """Why this run cannot be trusted, in words; None when it succeeded."""
        if self.error is not None:
            return f"`{self.display}` could not run: {self.error}"
        if self.timed_out:
            return f"`{self.display}` timed out after {self.duration_s:.1f}s and was killed"
        if self.returncode != 0:
            tail = (self.stderr or self.stdout).strip().splitlines()[-1:] or [""]
            return f"`{self.display}` exited {self.returncode}: {tail[0][:200]}"
        return None


@dataclass
class CommandRunner:
    """Runs commands by absolute path, resolved once per name."""

    path: str | None = None
    output_cap: int = DEFAULT_OUTPUT_CAP
    extra_env: Mapping[str, str] = field(default_factory=dict)
    _resolved: dict[str, str | None] = field(default_factory=dict, init=False, repr=False)

    def which(self, name: str) -> str | None:
        """Absolute path of a command, looked up once; None when absent."""
        if os.sep in name:
            return name if os.access(name, os.X_OK) else None
        if name not in self._resolved:
            self._resolved[name] = shutil.which(name, path=self.path)
        return self._resolved[name]

    def run(self, argv: Sequence[str], timeout: float) -> CommandResult:
        if not argv:
            raise ValueError("empty argv")
        started = time.monotonic()
        resolved = self.which(argv[0])
        args = tuple(argv)
        if resolved is None:
            return CommandResult(args, None, "", "", 0.0, error=f"{argv[0]}: command not found")
        env = {**child_environment(os.environ), **self.extra_env, "LC_ALL": "C", "LANG": "C"}
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                proc = subprocess.Popen(
                    [resolved, *args[1:]],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    env=env,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                return CommandResult(args, None, "", "", 0.0, error=str(exc))
            timed_out = False
            try:
                proc.wait(timeout=max(timeout, 0.0))
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
            duration = time.monotonic() - started
            stdout, cut_out = _read_capped(out, self.output_cap)
            stderr, cut_err = _read_capped(err, 64 * 1024)
        return CommandResult(
            argv=args,
            returncode=None if timed_out else proc.returncode,
            stdout=stdout,
            stderr=stderr,
            duration_s=duration,
            timed_out=timed_out,
            truncated=cut_out or cut_err,
        )


# What a command may inherit: enough to find programs, libraries, Python and the GPUs; never
# the rest (OTLP headers, tokens and other secrets live in the environment).
_INHERITED = (
    "PATH",
    "HOME",
    "USER",
    "TMPDIR",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "PYTHONHOME",
    "VIRTUAL_ENV",
    "SYSTEMD_PAGER",
)
_INHERITED_PREFIXES = ("CUDA_", "NVIDIA_", "__NV_", "SITSCHECK_")


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    return {
        key: value
        for key, value in environ.items()
        if key in _INHERITED or key.startswith(_INHERITED_PREFIXES)
    }


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the whole process group; reap briefly, never block on a D-state process."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=_REAP_GRACE_S)
    except subprocess.TimeoutExpired:
        pass


def _read_capped(handle: IO[bytes], cap: int) -> tuple[str, bool]:
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    handle.seek(0)
    data = handle.read(cap)
    return data.decode("utf-8", errors="replace"), size > cap
