"""Load rule and profile files safely, keeping line numbers for messages.

The file is read capped (`MAX_YAML_BYTES`) and its event stream checked first: anchors and
aliases are refused (no billion-laughs expansion), and so is nesting deeper than MAX_DEPTH.
PyYAML's composer (libyaml's where PyYAML was built with it) then gives the node graph with
each node's marks, and the values are built from it as the safe loader builds them, each
mapping and list remembering the line it starts on and the line of each entry, so a
validation error names `file:line`. PyYAML is imported where a file is read, not before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import RuleError
from ..sources.files import read_at_most

MAX_YAML_BYTES = 1024 * 1024
MAX_DEPTH = 64


class LinedDict(dict[str, Any]):
    """A mapping with the line it starts on, each key's line and each value's first line."""

    line: int
    lines: dict[Any, int]
    value_lines: dict[str, int]


class LinedList(list[Any]):
    """A list with the line it starts on and each item's line."""

    line: int
    lines: dict[Any, int]


def line_of(container: Any, key: str | int | None = None, default: int = 1) -> int:
    """The line of `key` in a lined mapping or list (the container's own line for a key it
    does not have); `default` for a value that is neither."""
    if isinstance(container, LinedDict | LinedList):
        return container.lines.get(key, container.line)
    return default


def value_line_of(container: Any, key: str) -> int:
    """Line where a key's value starts (for errors inside the value, e.g. an expression)."""
    if isinstance(container, LinedDict) and key in container.value_lines:
        return container.value_lines[key]
    return line_of(container, key)


def read_capped(path: Path) -> bytes:
    """At most MAX_YAML_BYTES, never more read into memory; a larger file is refused."""
    try:
        with path.open("rb") as handle:
            raw = read_at_most(handle, MAX_YAML_BYTES + 1)
    except OSError as exc:
        raise RuleError(str(path), f"cannot read: {exc.strerror}") from exc
    if len(raw) > MAX_YAML_BYTES:
        raise RuleError(str(path), f"larger than {MAX_YAML_BYTES} bytes; refused")
    return raw


def check_events(path: Path, text: str) -> None:
    """Refuse anchors/aliases (no billion laughs), nesting deeper than MAX_DEPTH (no
    recursion blow-up) and a second document, from the event stream, in the order they come,
    before anything is composed."""
    import yaml

    depth = documents = 0
    for event in yaml.parse(text, Loader=_loader()):
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                message = "not valid YAML: but found another document"
                raise RuleError(str(path), message, _line(event))
        elif isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise RuleError(str(path), "YAML anchors/aliases are not allowed", _line(event))
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                message = f"nested deeper than {MAX_DEPTH} levels; refused"
                raise RuleError(str(path), message, _line(event))
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load_yaml(path: Path) -> Any:
    """The file's one document (None for none): plain values, `LinedDict` and `LinedList`."""
    return parse_lined(path, read_capped(path).decode("utf-8", errors="replace"))


def parse_lined(path: Path, text: str) -> Any:
    """The document of `text` (the file `path`'s), as `load_yaml` gives it."""
    import yaml

    try:
        check_events(path, text)
        node = yaml.compose(text, Loader=_loader())
        return None if node is None else _built(str(path), node, yaml.SafeLoader(""))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise RuleError(str(path), f"not valid YAML: {problem}", line) from exc


def _loader() -> Any:
    """libyaml's loader where PyYAML was built with it (about 10x the pure-Python one), with
    the same events, nodes and marks."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _line(item: Any) -> int:
    """The 1-based line an event or node starts on."""
    return item.start_mark.line + 1 if item.start_mark else 1


def _built(path: str, node: Any, constructor: Any) -> Any:
    """A composed node's value, as the safe loader (`constructor`) builds it, with its lines."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        out = LinedDict()
        out.line, out.lines, out.value_lines = _line(node), {}, {}
        for key_node, value_node in node.value:
            scalar = isinstance(key_node, yaml.ScalarNode)
            key = _built(path, key_node, constructor) if scalar else None
            if not isinstance(key, str):
                raise RuleError(path, "mapping keys must be strings", _line(key_node))
            if key in out:
                raise RuleError(path, f"duplicate key {key!r}", _line(key_node))
            # a block scalar (`|`, `>`) starts on the line below its indicator
            block = getattr(value_node, "style", None) in ("|", ">")
            out.lines[key], out.value_lines[key] = _line(key_node), _line(value_node) + block
            out[key] = _built(path, value_node, constructor)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = LinedList(_built(path, item, constructor) for item in node.value)
        items.line, items.lines = _line(node), {n: _line(i) for n, i in enumerate(node.value)}
        return items
    try:
        return constructor.construct_object(node, deep=True)
    except yaml.YAMLError as exc:  # e.g. a malformed timestamp or binary scalar
        problem = getattr(exc, "problem", exc)
        raise RuleError(path, f"bad value: {problem}", _line(node)) from exc
    except (ValueError, OverflowError) as exc:
        raise RuleError(path, f"bad value: {exc}", _line(node)) from exc
