"""Pure: the kernel module's word that a driver client is another version than itself.

The NVIDIA kernel module refuses a client (NVML, nvidia-smi, CUDA) built for another driver
version and says so over two lines, then two of advice (nv.c, `NV_ESC_CHECK_VERSION_STR`):

    NVRM: API mismatch: the client has the version 550.54.14, but
    NVRM: this kernel module has the version 545.23.08.  Please
    NVRM: make sure that this kernel module and all NVIDIA driver
    NVRM: components have the same version.

Drivers that name the client print `the client 'NAME' has the version X,` and `but this kernel
module has the version Y`. The handler keeps the last report (both versions, its lines) and
how many there were; the driver check reads it only when no driver serves the GPUs.
"""

from __future__ import annotations

import re

from msgspec import Struct

# the two needles of the report's lines (the kernel-log interest's anchors)
MISMATCH = "API mismatch"
MODULE = "kernel module has the version"
_VERSION = r"([0-9][0-9A-Za-z.\-]*[0-9A-Za-z])"
_CLIENT = re.compile(r"has the version " + _VERSION)
_MODULE = re.compile(MODULE + " " + _VERSION)


class ApiMismatch(Struct, frozen=True):
    """One report: the client's and the kernel module's versions, where read, and its lines."""

    client: str | None
    module: str | None
    time: str | None
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        return " / ".join(self.lines)


class MismatchLines(Struct):
    """The line handler: the last API-mismatch report and how many the log holds."""

    count: int = 0
    last: ApiMismatch | None = None

    def feed(self, body: str, time: str | None) -> None:
        """A line's message and time: the pass hands it only the lines holding its anchors'
        needles."""
        if MISMATCH in body:
            self.count += 1
            self.last = ApiMismatch(_read(_CLIENT, body), _read(_MODULE, body), time, (body,))
        elif self.last is not None and self.last.module is None and MODULE in body:
            last = self.last
            lines = (*last.lines, body)
            self.last = ApiMismatch(last.client, _read(_MODULE, body), last.time, lines)

    def finish(self) -> MismatchLines:
        return self


def _read(pattern: re.Pattern[str], body: str) -> str | None:
    found = pattern.search(body)
    return found.group(1) if found else None
