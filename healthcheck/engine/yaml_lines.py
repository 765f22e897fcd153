"""Load YAML safely and keep line numbers for messages.

Aliases and anchors are refused (no billion-laughs expansion), the file size is capped, and
only plain scalars, lists and mappings are built: each mapping and list remembers the line
it starts on and the line of each entry, so a validation error names `file:line`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import RuleError

MAX_YAML_BYTES = 1024 * 1024
MAX_DEPTH = 64


class LinedDict(dict[str, Any]):
    line: int
    key_lines: dict[str, int]
    value_lines: dict[str, int]


class LinedList(list[Any]):
    line: int
    item_lines: list[int]


def read_capped(path: Path, limit: int = MAX_YAML_BYTES) -> bytes:
    """At most `limit` bytes, never more read into memory; a larger file is refused."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise RuleError(str(path), f"cannot read: {exc.strerror}") from exc
    if len(raw) > limit:
        raise RuleError(str(path), f"larger than {limit} bytes; refused")
    return raw


def check_events(path: Path, text: str) -> None:
    """Refuse anchors/aliases (no billion laughs) and nesting deeper than MAX_DEPTH (no
    recursion blow-up), from the event stream, before anything is built."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        line = event.start_mark.line + 1 if event.start_mark else None
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise RuleError(str(path), "YAML anchors/aliases are not allowed", line)
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise RuleError(str(path), f"nested deeper than {MAX_DEPTH} levels; refused", line)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load_yaml(path: Path) -> Any:
    text = read_capped(path).decode("utf-8", errors="replace")
    try:
        check_events(path, text)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise RuleError(str(path), f"not valid YAML: {problem}", line) from exc
    return None if node is None else _build(path, node)


def _build(path: Path, node: yaml.Node) -> Any:
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        mapping = LinedDict()
        mapping.line = line
        mapping.key_lines = {}
        mapping.value_lines = {}
        for key_node, value_node in node.value:
            key = _build(path, key_node)
            if not isinstance(key, str):
                raise RuleError(
                    str(path), "mapping keys must be strings", key_node.start_mark.line + 1
                )
            if key in mapping:
                raise RuleError(str(path), f"duplicate key {key!r}", key_node.start_mark.line + 1)
            mapping[key] = _build(path, value_node)
            mapping.key_lines[key] = key_node.start_mark.line + 1
            mapping.value_lines[key] = _content_line(value_node)
        return mapping
    if isinstance(node, yaml.SequenceNode):
        items = LinedList(_build(path, child) for child in node.value)
        items.line = line
        items.item_lines = [child.start_mark.line + 1 for child in node.value]
        return items
    constructor = yaml.SafeLoader("")
    try:
        return constructor.construct_object(node, deep=True)
    except yaml.YAMLError as exc:  # e.g. a malformed timestamp or binary scalar
        raise RuleError(str(path), f"bad value: {getattr(exc, 'problem', exc)}", line) from exc
    except (ValueError, OverflowError) as exc:
        raise RuleError(str(path), f"bad value: {exc}", line) from exc


def _content_line(node: yaml.Node) -> int:
    """The line a scalar's text starts on: a block scalar (`|`, `>`) starts below its key."""
    line = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">"):
        return line + 1
    return line


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
