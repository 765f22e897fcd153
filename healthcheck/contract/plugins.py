"""Entry points of a group (check and reporter plugins), found without `importlib.metadata`.

Importing `importlib.metadata` costs ~13 ms (it pulls in `email`, `zipfile`, `csv`): a tenth of
`sitscheck checks`. In the ordinary environment (every `sys.path` entry a folder or absent, and
the standard path finder the only one that finds distributions) this reads each
distribution's `entry_points.txt` itself, as `importlib.metadata.entry_points(group=...)` does:
`sys.path` order, a folder's entries in listing order, the first distribution of a name wins,
and the same file syntax. Anything else (a zip or an egg on `sys.path`, another finder, a
name or a line it does not read the same way) goes through `importlib.metadata`.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from importlib import import_module
from typing import Any, Protocol

from msgspec import Struct

_INFO_SUFFIXES = (".dist-info", ".egg-info")
# importlib.metadata.EntryPoint.pattern
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


class EntryPointLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def value(self) -> str: ...

    @property
    def group(self) -> str: ...

    def load(self) -> Any: ...


class EntryPoint(Struct, frozen=True):
    """One entry point as `importlib.metadata` names it: name, value (`module:attr`) and group."""

    name: str
    value: str
    group: str

    def load(self) -> Any:
        """The module, or the object `module:attr.attr` names (importlib.metadata's rule)."""
        match = _VALUE.match(self.value)
        if match is None:  # fails there the same way, with the same error
            from importlib.metadata import EntryPoint as Standard

            return Standard(self.name, self.value, self.group).load()
        target: Any = import_module(match.group("module"))
        for attribute in filter(None, (match.group("attr") or "").split(".")):
            target = getattr(target, attribute)
        return target


def entry_points(group: str) -> list[EntryPointLike]:
    found = _read_entry_points(group)
    if found is not None:
        return list(found)
    from importlib.metadata import entry_points as standard

    return list(standard(group=group))


def _read_entry_points(group: str) -> list[EntryPoint] | None:
    """None where the environment is not the ordinary one this reader knows."""
    from importlib.machinery import PathFinder

    if any(
        getattr(finder, "find_distributions", None) is not None and finder is not PathFinder
        for finder in sys.meta_path
    ):
        return None
    found: list[EntryPoint] = []
    seen: set[str] = set()
    for entry in sys.path:
        if not isinstance(entry, str):
            return None
        folder = entry or "."
        if os.path.basename(entry).lower().endswith(".egg") or (
            os.path.exists(folder) and not os.path.isdir(folder)
        ):
            return None
        try:
            children = os.listdir(folder)
        except OSError:
            continue
        for child in children:
            if not child.lower().endswith(_INFO_SUFFIXES):
                continue
            stem, ext = os.path.splitext(child)
            name = stem.partition("-")[0]
            if ext not in _INFO_SUFFIXES or not name:
                return None  # importlib.metadata would read the name from the metadata
            key = re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")
            if key in seen:
                continue
            seen.add(key)
            text = _entry_points_text(os.path.join(folder, child, "entry_points.txt"))
            pairs = _pairs(text or "")
            if pairs is None:
                return None
            found.extend(EntryPoint(n, v, g) for g, n, v in pairs if g == group)
    return found


def _entry_points_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
        return None


def _pairs(text: str) -> list[tuple[str, str, str]] | None:
    """(group, name, value) of each line under a `[group]` header; None for a line without
    `=` (importlib.metadata raises on it)."""
    out: list[tuple[str, str, str]] = []
    section: str | None = None
    for line in _lines(text):
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
            continue
        if section is None:
            continue
        name, equals, value = line.partition("=")
        if not equals:
            return None
        out.append((section, name.strip(), value.strip()))
    return out


def _lines(text: str) -> Iterator[str]:
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            yield line
