"""Errors sitscheck raises; the CLI turns them into messages and exit codes, nowhere else."""

from __future__ import annotations


class SitscheckError(Exception):
    """Base of every error sitscheck raises on purpose."""


class ConfigError(SitscheckError):
    """A configuration, option or profile that cannot be used."""


class WriteError(SitscheckError):
    """A file sitscheck was to write that could not be written, or not safely (a link or a
    file another process put where it writes): the path is named, nothing else is touched."""


class InputError(SitscheckError):
    """Bad input that names its file and, where known, its line."""

    def __init__(self, path: str, message: str, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.detail = message
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")


class BundleError(InputError):
    """A node bundle that cannot be opened safely."""


class RuleError(InputError):
    """A rule file that does not load or validate."""


class ProbeError(SitscheckError):
    """A probe of the host failed: the check that asked reports UNKNOWN with this reason."""


class ProbeTimeout(ProbeError):
    """A probe ran past its deadline."""
