"""The rule-file loader gives what PyYAML's safe loader gives, with the composer's lines.

`engine.yaml_lines.load_yaml` builds rule and profile files from the composed node graph (after
checking the event stream). Its values must be `yaml.safe_load`'s and each key's line the one
`yaml.compose` marks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from sitscheck.engine.yaml_lines import LinedDict, LinedList, line_of, load_yaml

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False),
    st.text(st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs")), max_size=12),
    st.sampled_from(["yes", "no", "on", "0x1f", "1e3", "~", "2024-01-02", "- x", "a: b", "#"]),
)


def _plain_key(text: str) -> bool:
    try:
        return bool(yaml.safe_load(text) == text)
    except yaml.YAMLError:
        return False


KEYS = st.text(st.characters(categories=("L", "N", "P")), min_size=1, max_size=8).filter(_plain_key)
DOCS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


def _key_lines(node: yaml.Node, out: list[tuple[str, int]]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            out.append((key.value, key.start_mark.line + 1))
            _key_lines(value, out)
    elif isinstance(node, yaml.SequenceNode):
        for child in node.value:
            _key_lines(child, out)


def _our_key_lines(value: Any, out: list[tuple[str, int]]) -> None:
    if isinstance(value, LinedDict):
        for key, item in value.items():
            out.append((key, line_of(value, key)))
            _our_key_lines(item, out)
    elif isinstance(value, LinedList):
        for item in value:
            _our_key_lines(item, out)


@settings(max_examples=150, deadline=None)
@given(DOCS, st.booleans(), st.sampled_from([None, "'", '"']))
def test_values_and_lines_match_pyyaml(
    tmp_path_factory: Any, doc: Any, flow: bool, style: str | None
) -> None:
    path: Path = tmp_path_factory.mktemp("y") / "doc.yaml"
    text = yaml.safe_dump(doc, default_flow_style=flow, default_style=style, allow_unicode=True)
    path.write_text(text, encoding="utf-8")
    loaded = load_yaml(path)
    assert loaded == yaml.safe_load(text)
    theirs: list[tuple[str, int]] = []
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if node is not None:
        _key_lines(node, theirs)
    ours: list[tuple[str, int]] = []
    _our_key_lines(loaded, ours)
    assert ours == theirs
