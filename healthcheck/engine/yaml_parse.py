"""YAML text to the lined trees of `yaml_lines`: libyaml's events, checked and built as they
come (aliases and anchors refused, nesting capped), what `yaml.compose` and the safe
constructor would give, each mapping and list with its lines. Imported where a file is
parsed, not before (PyYAML's import is a few percent of a run).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from ..errors import RuleError
from .lined import LinedDict, LinedList

MAX_DEPTH = 64


def parse_lined(path: Path, text: str) -> Any:
    """The document of `text` (the file `path`'s), as `yaml_lines.load_yaml` gives it."""
    try:
        return _Builder(path).build(_checked_events(path, text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise RuleError(str(path), f"not valid YAML: {problem}", line) from exc


def _parser() -> Any:
    """libyaml's parser where PyYAML was built with it (about 10x the pure-Python one), with
    the same events and marks."""
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def check_events(path: Path, text: str) -> None:
    """Refuse anchors/aliases (no billion laughs) and nesting deeper than MAX_DEPTH (no
    recursion blow-up), from the event stream, before anything is built."""
    for _event in _checked_events(path, text):
        pass


def _checked_events(path: Path, text: str) -> Iterator[yaml.Event]:
    depth = 0
    for event in yaml.parse(text, Loader=_parser()):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise RuleError(str(path), "YAML anchors/aliases are not allowed", _line(event))
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise RuleError(
                    str(path), f"nested deeper than {MAX_DEPTH} levels; refused", _line(event)
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        yield event


def _line(event: yaml.Event) -> int:
    return event.start_mark.line + 1 if event.start_mark else 1


class _Builder:
    """Plain values, lists and mappings from the event stream: what `yaml.compose` and the
    safe constructor give, without building the node graph first."""

    def __init__(self, path: Path) -> None:
        self._path = str(path)
        self._resolver = yaml.resolver.Resolver()
        self._constructor = yaml.SafeLoader("")
        self._single: Any = None  # a document that is one scalar
        self._documents = 0

    def build(self, events: Iterator[yaml.Event]) -> Any:
        stack: list[tuple[Any, Any]] = []  # (container, pending key) of each open collection
        document: Any = None
        for event in events:
            if isinstance(event, yaml.ScalarEvent):
                self._add(stack, self._scalar(event), event)
            elif isinstance(event, yaml.MappingStartEvent):
                mapping = LinedDict.at(_line(event))
                self._add(stack, mapping, event)
                stack.append((mapping, _NO_KEY))
            elif isinstance(event, yaml.SequenceStartEvent):
                items = LinedList.at(_line(event))
                self._add(stack, items, event)
                stack.append((items, _NO_KEY))
            elif isinstance(event, yaml.CollectionEndEvent):
                done = stack.pop()[0]
                if not stack:
                    document = done
            elif isinstance(event, yaml.DocumentStartEvent):
                self._documents += 1
                if self._documents == 1:
                    continue
                raise RuleError(
                    self._path,
                    "not valid YAML: but found another document",
                    _line(event),
                )
        return document if document is not None else self._single

    def _add(self, stack: list[tuple[Any, Any]], value: Any, event: yaml.NodeEvent) -> None:
        line = _line(event)
        if not stack:
            self._single = value
            return
        container, key = stack[-1]
        if isinstance(container, LinedList):
            container.append(value)
            container.item_lines.append(line)
        elif key is _NO_KEY:
            if not isinstance(value, str) or isinstance(event, yaml.CollectionStartEvent):
                raise RuleError(self._path, "mapping keys must be strings", line)
            if value in container:
                raise RuleError(self._path, f"duplicate key {value!r}", line)
            container.key_lines[value] = line
            stack[-1] = (container, value)
        else:
            container[key] = value
            container.value_lines[key] = _content_line(event)
            stack[-1] = (container, _NO_KEY)

    def _scalar(self, event: yaml.ScalarEvent) -> Any:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self._resolver.resolve(  # type: ignore[no-untyped-call]
                yaml.ScalarNode, event.value, event.implicit
            )
        node = yaml.ScalarNode(tag, event.value, style=event.style)
        try:
            return self._constructor.construct_object(node, deep=True)
        except yaml.YAMLError as exc:  # e.g. a malformed timestamp or binary scalar
            raise RuleError(
                self._path, f"bad value: {getattr(exc, 'problem', exc)}", _line(event)
            ) from exc
        except (ValueError, OverflowError) as exc:
            raise RuleError(self._path, f"bad value: {exc}", _line(event)) from exc


_NO_KEY = object()


def _content_line(event: yaml.NodeEvent) -> int:
    """The line a scalar's text starts on: a block scalar (`|`, `>`) starts below its key."""
    line = _line(event)
    if isinstance(event, yaml.ScalarEvent) and event.style in ("|", ">"):
        return line + 1
    return line
