"""The trees YAML files are read into (`yaml_lines`): plain values, lists and mappings, each
mapping and list with the line it starts on and the line of each entry, so a validation
error names `file:line`."""

from __future__ import annotations

from typing import Any


class LinedDict(dict[str, Any]):
    line: int
    key_lines: dict[str, int]
    value_lines: dict[str, int]

    @classmethod
    def at(cls, line: int) -> LinedDict:
        """An empty mapping that starts on `line`."""
        mapping = cls()
        mapping.line, mapping.key_lines, mapping.value_lines = line, {}, {}
        return mapping


class LinedList(list[Any]):
    line: int
    item_lines: list[int]

    @classmethod
    def at(cls, line: int) -> LinedList:
        """An empty list that starts on `line`."""
        items = cls()
        items.line, items.item_lines = line, []
        return items


def value_line_of(container: Any, key: str) -> int:
    """Line where a key's value starts (for errors inside the value, e.g. an expression)."""
    if isinstance(container, LinedDict) and key in container.value_lines:
        return container.value_lines[key]
    return line_of(container, key)


def line_of(container: Any, key: str | int | None = None, default: int = 1) -> int:
    if isinstance(container, LinedDict):
        if isinstance(key, str) and key in container.key_lines:
            return container.key_lines[key]
        return container.line
    if isinstance(container, LinedList):
        if isinstance(key, int) and 0 <= key < len(container.item_lines):
            return container.item_lines[key]
        return container.line
    return default
