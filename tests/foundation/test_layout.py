"""The layout's contracts (architecture.md): the core imports no check, and no module of the
core imports, through any chain, a module that imports it back."""

from __future__ import annotations

import ast
import re
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "healthcheck"


def _module(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(CORE).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(["sitscheck", *parts]), is_package


def _imports(path: Path) -> set[str]:
    """Every sitscheck module a file imports, at any depth of its code (lazy imports too)."""
    name, is_package = _module(path)
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m == "sitscheck" or m.startswith("sitscheck.")}


MODULES = {(_module(p)[0]): p for p in CORE.rglob("*.py")}
GRAPH = {
    name: {m for m in _imports(path) if m in MODULES and m != name}
    for name, path in MODULES.items()
}


def test_no_module_of_the_core_imports_a_check() -> None:
    offenders = {
        name: sorted(m for m in _imports(path) if m.startswith("sitscheck.checks"))
        for name, path in MODULES.items()
    }
    assert {k: v for k, v in offenders.items() if v} == {}
    # and none names one in a string it resolves later ("module:attribute")
    lazy = re.compile(r"sitscheck\.checks(?:\.\w+)+:\w")
    for name, path in MODULES.items():
        assert lazy.search(path.read_text(encoding="utf-8")) is None, name


def test_no_circular_import_between_modules_of_the_core() -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in GRAPH[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            # a package importing its own modules (re-exports) is no circle of two modules
            if len(component) > 1 and not _package_and_members(component):
                cycles.append(sorted(component))

    for name in sorted(GRAPH):
        if name not in index:
            visit(name)
    assert cycles == []


def _package_and_members(component: list[str]) -> bool:
    packages = [m for m in component if MODULES[m].name == "__init__.py"]
    return len(packages) == 1 and all(
        m == packages[0] or m.startswith(packages[0] + ".") for m in component
    )


def test_the_probe_finds_a_circle_where_there_is_one() -> None:
    """Control: the graph has edges (the scan reads imports at all)."""
    assert "sitscheck.contract.declarations" in GRAPH["sitscheck.contract.check"]
