"""The layout's contracts (architecture.md): the core imports no check, no module of the core
imports, through any chain, a module that imports it back, and every module has its place in
the layers. The graph is `tools/import_graph.py`'s (`python tools/import_graph.py` prints its
shape: modules, cycles, imports that climb back up the layers)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "import_graph", ROOT / "tools" / "import_graph.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TOOL = _tool()
MODULES: dict[str, Path] = TOOL.modules(ROOT)
CORE = {name for name, path in MODULES.items() if path.is_relative_to(ROOT / "healthcheck")}


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """Read when the tests run, not at collection (every worker collects every file)."""
    edges: dict[str, set[str]] = TOOL.graph(ROOT)
    return edges


def test_no_module_of_the_core_imports_a_check() -> None:
    offenders = {
        name: sorted(
            m for m in TOOL.imported(name, MODULES[name]) if m.startswith("sitscheck.checks")
        )
        for name in CORE
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    # and none names one in a string it resolves later ("module:attribute")
    lazy = re.compile(r"sitscheck\.checks(?:\.\w+)+:\w")
    for name in CORE:
        assert lazy.search(MODULES[name].read_text(encoding="utf-8")) is None, name


def test_no_circular_import_between_modules_of_the_core(graph: dict[str, set[str]]) -> None:
    assert TOOL.cycles({name: graph[name] & CORE for name in CORE}) == []


def test_every_module_has_a_layer() -> None:
    assert TOOL.unplaced(MODULES) == []


def test_the_probe_finds_a_circle_where_there_is_one(graph: dict[str, set[str]]) -> None:
    """Control: the graph has edges (the scan reads imports at all), and a circle of three
    modules is one component; a package with its own modules is none."""
    assert "sitscheck.contract.declarations" in graph["sitscheck.contract.check"]
    circle = {"sitscheck.a": {"sitscheck.b"}, "sitscheck.b": {"sitscheck.c"}}
    circle["sitscheck.c"] = {"sitscheck.a", "sitscheck.d"}
    assert TOOL.cycles(circle) == [["sitscheck.a", "sitscheck.b", "sitscheck.c"]]
    package = {"sitscheck.p": {"sitscheck.p.x"}, "sitscheck.p.x": {"sitscheck.p"}}
    assert TOOL.cycles(package) == []


def test_an_import_from_a_higher_layer_is_named(tmp_path: Path) -> None:
    """A checkout whose sources import the engine, and whose engine imports the sources (allowed:
    down the layers), relative and lazy imports alike: the climb, and one cycle."""
    (tmp_path / "healthcheck" / "sources").mkdir(parents=True)
    (tmp_path / "healthcheck" / "engine").mkdir()
    (tmp_path / "healthcheck" / "__init__.py").write_text("")
    (tmp_path / "healthcheck" / "sources" / "__init__.py").write_text("")
    (tmp_path / "healthcheck" / "engine" / "__init__.py").write_text("")
    (tmp_path / "healthcheck" / "sources" / "live.py").write_text(
        "def later():\n    from ..engine import cel\n"
    )
    (tmp_path / "healthcheck" / "engine" / "cel.py").write_text("import sitscheck.sources.live\n")
    edges = TOOL.graph(tmp_path)
    live = "sitscheck.sources.live"  # `from ..engine import cel` imports the package too
    assert TOOL.climbing(edges) == [(live, "sitscheck.engine"), (live, "sitscheck.engine.cel")]
    assert TOOL.cycles(edges) == [["sitscheck.engine.cel", "sitscheck.sources.live"]]
    assert "import cycles: 1" in TOOL.report(tmp_path)
    assert "sources.live (sources) -> engine.cel (engine)" in TOOL.report(tmp_path)


# Every import goes down the layers, and no group of modules imports itself back; a
# new climb or cycle fails here, named.


def test_no_import_climbs_back_up_the_layers(graph: dict[str, set[str]]) -> None:
    assert TOOL.climbing(graph) == []


def test_no_import_cycle_anywhere(graph: dict[str, set[str]]) -> None:
    assert TOOL.cycles(graph) == []
