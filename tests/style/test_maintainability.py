"""Every module of `healthcheck/` and `checks/` has a maintainability index of 20 or more
(radon's, as `radon mi` computes it: docstrings count as comments): the house style's bound
for a file a newcomer can read in one sitting (docs/architecture.md, "Habits"). A module
below it is split by what it does, not shortened by tricks."""

from __future__ import annotations

from pathlib import Path

from radon.metrics import mi_visit

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("healthcheck", "checks")
MINIMUM = 20.0


def _modules() -> list[Path]:
    return sorted(path for folder in FOLDERS for path in (ROOT / folder).rglob("*.py"))


def test_every_module_has_a_maintainability_index_of_20_or_more() -> None:
    modules = _modules()
    assert len(modules) > 100  # the folders were found
    low = {
        str(path.relative_to(ROOT)): round(index, 1)
        for path in modules
        if (index := mi_visit(path.read_text(encoding="utf-8"), True)) < MINIMUM
    }
    assert low == {}, f"radon mi below {MINIMUM:g} (split by what each part does): {low}"
