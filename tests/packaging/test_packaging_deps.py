"""Declared dependencies equal imported ones (issue 20).

Every distribution that healthcheck/ and checks/ import (found with `ast`, each module mapped
to the installed distribution whose files hold it) is declared in [project.dependencies];
a module imported somewhere under `except ImportError` (or by `importlib.import_module("x")`)
is optional (the code copes with its absence there, and imports it elsewhere only once it
was found): declared there or in an extra. And every declared dependency is imported.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("healthcheck", "checks")
OWN = {"sitscheck"}
_GUARDS = {"ImportError", "ModuleNotFoundError", "Exception"}


def _name(requirement: str) -> str:
    base = re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", base).lower()


def _guarded(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type
    names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
    return kinds is None or any(isinstance(n, ast.Name) and n.id in _GUARDS for n in names)


def imported_modules(source: str) -> dict[str, bool]:
    """Absolute module names imported by `source` -> whether some import of it is guarded."""
    tree = ast.parse(source)
    found: dict[str, bool] = {}

    def note(module: str, guarded: bool) -> None:
        found[module] = found.get(module, False) or guarded

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.Try):
            inner = guarded or any(_guarded(h) for h in node.handlers)
            for child in node.body:
                visit(child, inner)
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child, guarded)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                note(alias.name, guarded)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            note(node.module, guarded)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
        ):
            note(node.args[0].value, True)
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return found


def _owners() -> dict[Path, str]:
    owners: dict[Path, str] = {}
    for dist in importlib.metadata.distributions():
        for file in dist.files or []:
            if file.suffix == ".py":
                owners[Path(str(file.locate())).resolve()] = _name(dist.metadata["Name"])
    return owners


def distribution(module: str, owners: dict[Path, str]) -> str:
    """The installed distribution holding `module` (its own name where it is not installed)."""
    parts = module.split(".")
    while parts:
        try:
            spec = importlib.util.find_spec(".".join(parts))
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.origin and spec.origin not in ("built-in", "frozen"):
            owner = owners.get(Path(spec.origin).resolve())
            if owner is not None:
                return owner
        parts.pop()
    return _name(module.split(".")[0])


def test_the_scan_sees_guards_and_lazy_imports() -> None:
    source = (
        "import yaml\n"
        "def f():\n    import grpc\n"
        "try:\n    import torch\nexcept ImportError:\n    torch = None\n"
        "importlib.import_module('tensorrt')\n"
        "from . import sibling\n"
    )
    assert imported_modules(source) == {
        "yaml": False,
        "grpc": False,
        "torch": True,
        "tensorrt": True,
    }


def test_declared_dependencies_equal_imported_ones() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {_name(r) for r in project["dependencies"]}
    extras = {_name(r) for reqs in project["optional-dependencies"].values() for r in reqs}
    imports: dict[str, bool] = {}
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            for module, guarded in imported_modules(path.read_text(encoding="utf-8")).items():
                imports[module] = imports.get(module, False) or guarded
    owners = _owners()
    required: dict[str, set[str]] = {}
    optional: dict[str, set[str]] = {}
    for module, guarded in imports.items():
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top in OWN:
            continue
        (optional if guarded else required).setdefault(distribution(module, owners), set()).add(
            module
        )
    undeclared = {d: sorted(m) for d, m in required.items() if d not in declared}
    assert not undeclared, f"imported, not in [project.dependencies]: {undeclared}"
    loose = {d: sorted(m) for d, m in optional.items() if d not in declared | extras}
    assert not loose, f"optional imports in no extra: {loose}"
    unused = declared - set(required) - set(optional)
    assert not unused, f"declared, never imported by healthcheck/ or checks/: {sorted(unused)}"
