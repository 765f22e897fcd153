"""The second example plugin (examples/plugins/bar1_memory) as an operator installs it, and
what it proves: a check that reads an NVML value no built-in reads declares the call in its
own folder, and live reading, `sitscheck collect` and replay follow from the declaration,
with no file of sitscheck naming it.

In a fresh venv (`plugin_venv.make_venv`): its check is listed, its code explained, its rule
listed; `sitscheck collect` on the fake node (sitscheck's own fault-suite node, its fake NVML
answering the declared call) records its reading, and that recording replays as the bundle
committed with the plugin does; the plugin's own tests (its replays included) pass against
the installed package. And sitscheck's wheel ships every package of its source tree, one
added included, with no list to keep (setup.py finds them).
"""

from __future__ import annotations

import importlib.util
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest
from bar1_plugin import BUNDLE, KEY, record, recording
from plugin_venv import Venv, build_wheels, copy_core, make_venv

NAME = "bar1_memory"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("venv") is None or importlib.util.find_spec("pip") is None,
    reason="the venv module or pip is missing",
)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Venv:
    return make_venv(tmp_path_factory.mktemp("plugin"), [NAME])


def test_sitscheck_and_the_plugin_are_the_venvs_own(venv: Venv) -> None:
    assert venv.imports_its_own("sitscheck", "sitscheck_bar1_memory")


def test_checks_lists_it_as_a_gpu_check(venv: Venv) -> None:
    done = venv.sitscheck("checks")
    assert done.returncode == 0, done.stderr
    (line,) = [row for row in done.stdout.splitlines() if row.startswith(f"{NAME} ")]
    assert line.split()[1] == "runtime"
    assert line.endswith("[gpu]")


def test_explain_and_rules_list_know_its_code_and_rule(venv: Venv) -> None:
    done = venv.sitscheck("explain", "bar1_memory.exhausted")
    assert done.returncode == 0, done.stderr
    rows = dict(
        (m.group(1), m.group(2))
        for row in done.stdout.splitlines()[1:]
        if (m := re.match(r"\s+(\w[\w ]*):\s+(.*)", row)) is not None
    )
    assert (rows["severity"], rows["kind"]) == ("warning", "condition")
    assert rows["explained by"] == "bar1_memory.nearly_full"
    assert "nvmlDeviceGetBAR1MemoryInfo" in rows["evidence"]
    listed = venv.sitscheck("rules", "list")
    (rule,) = [row for row in listed.stdout.splitlines() if row.startswith("bar1_memory.")]
    assert rule.split()[:3] == ["bar1_memory.nearly_full", "gpu", "warning"]


def test_collect_on_the_fake_node_records_the_declared_reading(venv: Venv, tmp_path: Path) -> None:
    """`sitscheck collect` with the plugin alone selected: the fake NVML answers the call its
    declaration names (and nothing made it known to sitscheck but that declaration); the
    recording holds each GPU's reading and replays as the committed bundle does."""
    out = tmp_path / "bundle"
    done = record(venv.python, out, tmp_path / "node")
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["meta.json", "nvml.json"]
    recorded = json.loads((out / "nvml.json").read_text())
    given = recording()
    assert [g[KEY] for g in recorded["gpus"]] == [g[KEY] for g in given["gpus"]]
    assert all(KEY not in g["unavailable"] for g in recorded["gpus"])
    committed = json.loads((BUNDLE / "nvml.json").read_text())
    assert [g[KEY] for g in committed["gpus"]] == [g[KEY] for g in recorded["gpus"]]
    assert _replayed(venv, out, tmp_path / "new.json") == _replayed(
        venv, BUNDLE, tmp_path / "committed.json"
    )


def test_the_plugins_own_tests_pass_against_the_installed_package(venv: Venv) -> None:
    done = venv.plugin_tests(NAME)
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "passed" in tail
    assert "skipped" not in tail, tail  # its replays run: the plugin is installed here


def test_the_wheel_ships_every_package_of_the_tree(venv: Venv, tmp_path: Path) -> None:
    """Every module of healthcheck/, checks/ and rules/ is in sitscheck's wheel under its
    import name, and so is a package added to the tree: nothing lists them by hand."""
    (wheel,) = venv.wheels.glob("sitscheck-*.whl")
    assert _modules(wheel) == _tree_modules(Path(__file__).resolve().parents[2])
    core = copy_core(tmp_path / "sitscheck")
    added = core / "checks" / "added_here"
    added.mkdir()
    (added / "__init__.py").write_text('"""A package the build must find."""\n')
    (added / "check.py").write_text("NAME = 'added_here'\n")
    build_wheels([core], tmp_path / "wheels")
    (grown,) = (tmp_path / "wheels").glob("sitscheck-*.whl")
    assert _modules(grown) - _modules(wheel) == {
        "sitscheck/checks/added_here/__init__.py",
        "sitscheck/checks/added_here/check.py",
    }


# --------------------------------------------------------------------------- helpers


def _replayed(venv: Venv, bundle: Path, out: Path) -> dict[str, Any]:
    """The plugin's check in a replay of `bundle`: status, facts, findings, its rule's verdicts."""
    done = venv.sitscheck("run", "--from", str(bundle), "--check", NAME, "-o", f"json={out}")
    assert out.exists(), done.stderr
    report = json.loads(out.read_text())
    (check,) = [c for c in report["checks"] if c["name"] == NAME]
    verdicts = [(v["rule"], v["status"]) for v in report["verdicts"] if v["rule"].startswith(NAME)]
    return {
        "status": check["status"],
        "facts": check["facts"],
        "findings": check["findings"],
        "verdicts": verdicts,
        "exit": done.returncode,
    }


_ROOTS = {"healthcheck": "sitscheck", "checks": "sitscheck/checks", "rules": "sitscheck/rules"}


def _tree_modules(repo: Path) -> set[str]:
    found = set()
    for folder, name in _ROOTS.items():
        for path in (repo / folder).rglob("*.py"):
            if "__pycache__" not in path.parts:
                found.add(f"{name}/{path.relative_to(repo / folder).as_posix()}")
    return found


def _modules(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {n for n in archive.namelist() if n.startswith("sitscheck/") and n.endswith(".py")}
