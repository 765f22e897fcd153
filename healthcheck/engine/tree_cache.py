"""The rule and profile files as parsed, kept between runs by the digest of their bytes.

Reading the shipped rule and profile files costs PyYAML's import and libyaml's parse with the
line of every key (`yaml_lines`): ~8% of a replay's instructions. The trees of the last run's
files are kept in one JSON file of the user's cache folder (`cache_file`), by the SHA-256 of
each file's bytes: a tree read back is that of the very bytes parsed before; a changed file
is parsed again (and its errors said again, as a file that failed is never kept). Only trees
whose values JSON holds as they are (strings, finite numbers, booleans, null) are kept: a
file with a timestamp or binary scalar is parsed every run. Only the last run's files are
written, and only when they changed.
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

from .cache_file import LastRun
from .lined import LinedDict, LinedList

FORMAT = 1
FILE_NAME = "rule-trees.json"
MAX_FILE_BYTES = 256 * 1024  # a larger file's tree is not kept (the shipped ones: < 30 KB)


class TreeCache:
    """`get` the tree of a file's bytes parsed in the last run, `put` one parsed now, `save`
    once every file is read."""

    def __init__(self, folder: Path | None) -> None:
        self._entries = LastRun(folder, FILE_NAME, {"format": FORMAT}, "trees")

    @property
    def held(self) -> int:
        return len(self._entries.kept)

    def get(self, raw: bytes) -> tuple[Any] | None:
        """(a fresh copy of the tree kept for these bytes,), or None."""
        digest = _digest(raw)
        encoded = self._entries.take(digest)
        if encoded is None:
            return None
        try:
            return (_decode(encoded),)
        except (TypeError, ValueError, IndexError, KeyError):
            self._entries.drop(digest)
            return None

    def put(self, raw: bytes, tree: Any) -> None:
        if len(raw) > MAX_FILE_BYTES:
            return
        try:
            self._entries.put(_digest(raw), _encode(tree))
        except _NotKept:
            pass

    def save(self) -> bool:
        """Write this run's trees where they differ from those read; whether it wrote."""
        return self._entries.save()


class _NotKept(Exception):
    """A value JSON does not hold as it is."""


def _digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


# A mapping is ["m", line, [[key, key line, value line, value], ...]], a list ["s", line,
# [[item line, item], ...]]; a scalar is itself (never a JSON list).
def _encode(node: Any) -> Any:
    if isinstance(node, LinedDict):
        entries = [
            [key, node.key_lines[key], node.value_lines.get(key), _encode(value)]
            for key, value in node.items()
        ]
        return ["m", node.line, entries]
    if isinstance(node, LinedList):
        return [
            "s",
            node.line,
            [[line, _encode(item)] for line, item in zip(node.item_lines, node, strict=True)],
        ]
    if node is None or type(node) in (str, bool, int):
        return node
    if type(node) is float and math.isfinite(node):
        return node
    raise _NotKept(type(node).__name__)


def _decode(encoded: Any) -> Any:
    if not isinstance(encoded, list):
        if isinstance(encoded, dict):
            raise ValueError("a mapping is kept as a list")
        return encoded
    kind, line, entries = encoded
    if kind == "m":
        mapping = LinedDict.at(int(line))
        for key, key_line, value_line, value in entries:
            if not isinstance(key, str):
                raise TypeError("a key is a string")
            mapping[key] = _decode(value)
            mapping.key_lines[key] = int(key_line)
            if value_line is not None:
                mapping.value_lines[key] = int(value_line)
        return mapping
    if kind == "s":
        items = LinedList.at(int(line))
        for item_line, item in entries:
            items.append(_decode(item))
            items.item_lines.append(int(item_line))
        return items
    raise ValueError(f"unknown kind {kind!r}")
