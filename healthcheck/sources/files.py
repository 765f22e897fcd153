"""Read files under a root (`/sys` live, `bundle/sysfs` in a replay), safely and capped."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MAX_SMALL_FILE = 1024 * 1024


@dataclass(frozen=True, slots=True)
class FileTree:
    """A directory tree addressed by paths relative to its root (`bus/pci/devices/...`).

    `confined` trees (bundles) never follow a path that leaves the root, symlinks included.
    """

    root: Path
    confined: bool = False

    def path(self, relative: str) -> Path | None:
        candidate = self.root / relative.lstrip("/")
        if not self.confined:
            return candidate
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):
            return None
        root = self.root.resolve()
        return resolved if resolved == root or root in resolved.parents else None

    def exists(self, relative: str) -> bool:
        path = self.path(relative)
        return path is not None and path.exists()

    def read_text(self, relative: str, limit: int = MAX_SMALL_FILE) -> str | None:
        """The file's text, or None when it could not be read (absent, unreadable, or gone
        mid-read). A caller that found the folder first tells "vanished" from "absent" by
        asking `exists()` of the folder again (pcie_link's `read_chain` does)."""
        path = self.path(relative)
        if path is None:
            return None
        try:
            with path.open("rb") as handle:
                return handle.read(limit).decode("utf-8", errors="replace")
        except OSError:
            return None

    def list_dir(self, relative: str) -> list[str]:
        path = self.path(relative)
        if path is None:
            return []
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []

    def glob(self, pattern: str, limit: int = 100_000) -> list[str]:
        """Files under the root matching `pattern` (relative, `*`/`?`/`[...]` per component),
        as relative paths in sorted order; links are followed (a class link's target is read
        under the link's own path); at most `limit` paths."""
        import glob as globbing

        root = str(self.root)
        found: list[str] = []
        for match in globbing.iglob(pattern.lstrip("/"), root_dir=root):
            if self.path(match) is not None and os.path.isfile(os.path.join(root, match)):
                found.append(match)
                if len(found) >= limit:
                    break
        return sorted(found)

    def real_relative(self, relative: str) -> str | None:
        """The path with symlinks resolved, relative to the root (live sysfs device links)."""
        path = self.path(relative)
        if path is None:
            return None
        try:
            resolved = path.resolve()
            return str(resolved.relative_to(self.root.resolve()))
        except (OSError, ValueError, RuntimeError):
            return None
