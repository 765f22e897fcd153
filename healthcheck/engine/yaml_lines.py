"""Load YAML safely and keep line numbers for messages.

Aliases and anchors are refused (no billion-laughs expansion), the file size is capped, and
only plain scalars, lists and mappings are built: each mapping and list remembers the line
it starts on and the line of each entry, so a validation error names `file:line`. The
parsing itself is `yaml_parse`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import RuleError
from ..sources.files import read_at_most
from .lined import LinedDict, LinedList, line_of, value_line_of

__all__ = [
    "LinedDict",
    "LinedList",
    "line_of",
    "load_yaml",
    "read_capped",
    "value_line_of",
]


MAX_YAML_BYTES = 1024 * 1024


def read_capped(path: Path, limit: int = MAX_YAML_BYTES) -> bytes:
    """At most `limit` bytes, never more read into memory; a larger file is refused."""
    try:
        with path.open("rb") as handle:
            raw = read_at_most(handle, limit + 1)
    except OSError as exc:
        raise RuleError(str(path), f"cannot read: {exc.strerror}") from exc
    if len(raw) > limit:
        raise RuleError(str(path), f"larger than {limit} bytes; refused")
    return raw


def load_yaml(path: Path) -> Any:
    """The document, built in one pass over libyaml's events: checked (`check_events`) and
    built as they come, each mapping and list with its lines (`yaml_parse`)."""
    from .yaml_parse import parse_lined

    return parse_lined(path, read_capped(path).decode("utf-8", errors="replace"))
