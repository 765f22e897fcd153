"""The rule and profile files' trees kept between runs (`engine.tree_cache`, issue 19).

A tree read back must be the one the file's bytes parse to, lines and all; a changed file is
parsed again (its errors said again); a value JSON does not hold as it is is never kept; a
run whose files are all kept never imports PyYAML.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sitscheck.engine.loader import builtin_rules_dir, load_profiles, load_rules, rule_files
from sitscheck.engine.tree_cache import FILE_NAME, TreeCache
from sitscheck.engine.yaml_lines import LinedDict, LinedList, load_yaml
from sitscheck.errors import RuleError

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(builtin_rules_dir().glob("*.yaml")) + sorted(
    (builtin_rules_dir() / "profiles").glob("*.yaml")
)


def _lined(node: Any) -> Any:
    """The tree with every line it holds, as plain data (types included)."""
    if isinstance(node, LinedDict):
        return (
            "m",
            node.line,
            [(k, node.key_lines[k], node.value_lines.get(k), _lined(v)) for k, v in node.items()],
        )
    if isinstance(node, LinedList):
        return (
            "s",
            node.line,
            [(line, _lined(v)) for line, v in zip(node.item_lines, node, strict=True)],
        )
    return (type(node).__name__, node)


def _private(tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o700)
    return folder


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_file_reads_back_as_it_parses(path: Path, tmp_path: Path) -> None:
    folder = _private(tmp_path)
    first = TreeCache(folder)
    parsed = load_yaml(path, first)
    assert first.save()
    second = TreeCache(folder)
    assert second.held == 1
    kept = second.get(path.read_bytes())
    again = second.get(path.read_bytes())
    assert kept is not None and again is not None
    assert _lined(kept[0]) == _lined(parsed) == _lined(load_yaml(path))
    assert kept[0] is not again[0]  # a fresh copy each time


def _site_rule(folder: Path, when: str) -> Path:
    path = folder / "site.yaml"
    path.write_text(
        "rules:\n"
        "  - id: site.rule\n"
        "    severity: warning\n"
        f"    when: {when}\n"
        "    message: site rule\n"
    )
    return path


def test_a_changed_file_is_parsed_again_and_its_errors_said(tmp_path: Path) -> None:
    folder = _private(tmp_path)
    site = _site_rule(tmp_path, '"1 == 1"')
    trees = TreeCache(folder)
    load_rules([site], trees=trees)
    trees.save()
    site.write_text(site.read_text().replace("site rule", "site rule: [unclosed"))
    with pytest.raises(RuleError) as raised:
        load_rules([site], trees=TreeCache(folder))
    assert raised.value.line == 5


def test_a_file_that_failed_is_never_kept(tmp_path: Path) -> None:
    folder = _private(tmp_path)
    site = tmp_path / "broken.yaml"
    site.write_text("rules: [\n")
    trees = TreeCache(folder)
    with pytest.raises(RuleError):
        load_yaml(site, trees)
    assert not trees.save()
    assert not (folder / FILE_NAME).exists()


def test_a_value_json_does_not_hold_is_never_kept(tmp_path: Path) -> None:
    folder = _private(tmp_path)
    path = tmp_path / "dated.yaml"
    path.write_text("name: dated\nwhen: 2026-12-01\nratio: .inf\n")
    trees = TreeCache(folder)
    tree = load_yaml(path, trees)
    assert str(tree["when"]) == "2026-12-01"
    assert not trees.save()
    plain = tmp_path / "plain.yaml"
    plain.write_text("name: plain\nlimit: 3\nratio: 0.5\nflag: true\nnothing:\n")
    load_yaml(plain, trees)
    assert trees.save()
    kept = TreeCache(folder).get(plain.read_bytes())
    assert kept is not None and _lined(kept[0]) == _lined(load_yaml(plain))


@pytest.mark.parametrize(
    "damage",
    [
        lambda e: ["m", 1, [[1, 1, 1, "key not a string"]]],
        lambda e: ["x", 1, []],
        lambda e: {"m": e},
        lambda e: ["m", 1],
    ],
)
def test_a_damaged_tree_is_parsed_again_and_written_anew(tmp_path: Path, damage: Any) -> None:
    folder = _private(tmp_path)
    path = builtin_rules_dir() / "quick-check.yaml"
    trees = TreeCache(folder)
    load_yaml(path, trees)
    trees.save()
    data = json.loads((folder / FILE_NAME).read_text())
    ((digest, encoded),) = data["trees"].items()
    data["trees"][digest] = damage(encoded)
    (folder / FILE_NAME).write_text(json.dumps(data))
    again = TreeCache(folder)
    assert again.get(path.read_bytes()) is None
    assert _lined(load_yaml(path, again)) == _lined(load_yaml(path))
    assert again.save()
    assert json.loads((folder / FILE_NAME).read_text())["trees"][digest] == encoded


def test_the_file_holds_the_last_run_s_trees_only(tmp_path: Path) -> None:
    folder = _private(tmp_path)
    first = TreeCache(folder)
    load_rules(rule_files([]), trees=first)
    load_profiles([], trees=first)
    assert first.save()
    everything = len(json.loads((folder / FILE_NAME).read_text())["trees"])
    assert everything == len(SHIPPED)
    second = TreeCache(folder)
    load_yaml(SHIPPED[0], second)
    assert second.save()
    assert len(json.loads((folder / FILE_NAME).read_text())["trees"]) == 1


def test_a_run_whose_files_are_kept_never_imports_pyyaml(tmp_path: Path) -> None:
    """The second of two replays reads every rule and profile file back: PyYAML is never
    imported (the first one imports it)."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    env.pop("CACHE_DIRECTORY", None)
    code = (
        "import sys\n"
        "from sitscheck.cli import main\n"
        "sys.argv = ['sitscheck', 'run', '--from', sys.argv[1], '--output', 'json=/dev/null']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('yaml' in sys.modules, file=sys.stderr)\n"
    )
    seen = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", code, str(ROOT / "examples" / "h200x2-idle")],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        seen.append(done.stderr.strip().splitlines()[-1])
    assert seen == ["True", "False"]


def test_a_large_file_s_tree_is_not_kept(tmp_path: Path) -> None:
    from sitscheck.engine.tree_cache import MAX_FILE_BYTES

    folder = _private(tmp_path)
    large = tmp_path / "large.yaml"
    large.write_text("params:\n" + "".join(f"  p{n}: {n}\n" for n in range(MAX_FILE_BYTES // 8)))
    assert len(large.read_bytes()) > MAX_FILE_BYTES
    trees = TreeCache(folder)
    assert load_yaml(large, trees)["params"]["p7"] == 7
    assert not trees.save()
