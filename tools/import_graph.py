"""`python tools/import_graph.py [CHECKOUT]`: the shape of the package's import graph.

Prints the number of modules and of imports between them, the import cycles (strongly
connected components of more than one module; a package with its own modules, re-exports, is
none), and the imports that climb back up the layers (`LAYERS`: the architecture's one
picture, data going one way). Every import counts, a lazy one inside a function too. CHECKOUT
defaults to this one; the standard library alone reads it (`ast`), so any checkout's tree can
be read by this file. Exit 0 always: it describes, the tests judge (tests/foundation/
test_layout.py reads the same graph: no cycle in the core, every module in a layer).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from pathlib import Path

# folder of the checkout -> the import package it becomes (pyproject.toml's package-dir)
FOLDERS = {"healthcheck": "sitscheck", "checks": "sitscheck.checks", "rules": "sitscheck.rules"}

# The layers, lowest first (docs/architecture.md, "One picture"): a module may import its own
# layer and those below it. A module belongs to the longest name here that it is or lies under
# ("" is the package itself). What a check declares feeds the sources ("each check's declared
# evidence"), so the declarations lie below them; what a check receives wraps the sources, so
# the contract's context lies above them; the runner runs the checks; the engine judges them.
# A declared workload's parent side (`workloads`: its children run, the GPUs read around them)
# serves the live sources (`--load`, `--bandwidth`) as well as `accept`, so it is a source;
# the record a phase writes is read by the checks through the contract (`contract.phase_record`).
# The registry loads checks and holds them to the contract (`contract.check`): it is part of the
# check contract, and the live sources are handed what the installed checks declare.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("", "errors", "printable", "threads", "status", "address_space", "structs",
              "invalid", "models", "config", "rules")),
    ("declarations", ("contract.declarations", "contract.evidence", "contract.plugins",
                      "contract.facts", "contract.settings",
                      "contract.vanished", "kernlog.anchor")),
    ("sources", ("sources", "kernlog", "smi", "workloads")),
    ("check contract", ("contract",)),
    ("gpu view", ("gpu",)),
    ("checks", ("checks", "probes")),
    ("runner", ("contract.runner",)),
    ("engine", ("engine",)),
    ("report", ("report",)),
    ("outputs", ("reporters", "export")),
    ("runs", ("app", "daemon", "accept", "interrupt", "site_config")),
    ("cli", ("cli", "cli_parts", "__main__")),
)  # fmt: skip


def modules(checkout: Path) -> dict[str, Path]:
    """Every module of the package, by its dotted name."""
    found: dict[str, Path] = {}
    for folder, package in FOLDERS.items():
        for path in sorted((checkout / folder).rglob("*.py")):
            parts = list(path.relative_to(checkout / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


def imported(name: str, path: Path) -> set[str]:
    """The names a module imports, at any depth of its code, relative ones made absolute
    (`from a import b` names both `a` and `a.b`: b may be a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(parent + ([node.module] if node.module else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def graph(checkout: Path) -> dict[str, set[str]]:
    """Each module's imports of the package's other modules."""
    known = modules(checkout)
    return {
        name: {m for m in imported(name, path) if m in known and m != name}
        for name, path in known.items()
    }


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), less a package
    with its own modules alone."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component: list[str] = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1 and not _package_and_its_modules(component):
                found.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(edges) + 100))
    try:
        for name in sorted(edges):
            if name not in index:
                visit(name)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def _package_and_its_modules(component: list[str]) -> bool:
    shortest = min(component, key=len)
    return all(m == shortest or m.startswith(shortest + ".") for m in component) and all(
        m.count(".") == shortest.count(".") + 1 for m in component if m != shortest
    )


def layer(module: str) -> int | None:
    """The number of the layer a module belongs to (None: in no layer)."""
    name = module.partition(".")[2]
    best: tuple[int, int] | None = None  # (length of the name matched, layer)
    for number, (_title, names) in enumerate(LAYERS):
        for prefix in names:
            if name == prefix or (prefix and name.startswith(prefix + ".")):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), number)
    return None if best is None else best[1]


def climbing(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The imports of a module from a higher layer than its own."""
    found = []
    for source, targets in edges.items():
        for target in targets:
            low, high = layer(source), layer(target)
            if low is not None and high is not None and high > low:
                found.append((source, target))
    return sorted(found)


def unplaced(names: Iterable[str]) -> list[str]:
    return sorted(m for m in names if layer(m) is None)


def _short(module: str) -> str:
    return module.removeprefix("sitscheck.")


def report(checkout: Path) -> str:
    edges = graph(checkout)
    rows = [
        f"checkout: {checkout}",
        f"modules: {len(edges)}; imports between them: {sum(map(len, edges.values()))}",
        "layers, lowest first: "
        + " < ".join(f"{title} ({', '.join(n or 'sitscheck' for n in names)})"
                     for title, names in LAYERS),
    ]  # fmt: skip
    if missing := unplaced(edges):
        rows.append(f"in no layer (add them to LAYERS): {', '.join(missing)}")
    found = cycles(edges)
    rows.append(f"import cycles: {len(found)}")
    rows += [f"  {len(c)} modules: {', '.join(map(_short, c))}" for c in found]
    climbs = climbing(edges)
    rows.append(f"imports that climb back up the layers: {len(climbs)}")
    for source, target in climbs:
        below, above = LAYERS[layer(source) or 0][0], LAYERS[layer(target) or 0][0]
        rows.append(f"  {_short(source)} ({below}) -> {_short(target)} ({above})")
    return "\n".join(rows)


if __name__ == "__main__":
    here = Path(__file__).resolve().parent.parent
    print(report(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else here))
