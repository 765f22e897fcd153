"""Every bundle of tests/bundles, by name: the recorded nodes, the fault bundles, and each
scenario (materialised from its base when asked for, tests/rules/rule_scenarios.py)."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
if str(TESTS / "rules") not in sys.path:
    sys.path.insert(0, str(TESTS / "rules"))

from rule_scenarios import BUNDLES, materialise, names  # noqa: E402

RECORDED = sorted(
    str(meta.parent.relative_to(BUNDLES))
    for meta in BUNDLES.rglob("meta.json")
    if "scenarios" not in meta.relative_to(BUNDLES).parts
)
__all__ = ["CASES", "RECORDED", "bundle_folder", "materialise"]
CASES = [*RECORDED, *(f"scenarios/{name}" for name in names())]


def bundle_folder(case: str, scratch: Path) -> Path:
    """The case's real folder (a scenario is materialised under `scratch`)."""
    kind, _, name = case.partition("/")
    if kind == "scenarios":
        return materialise(name, scratch / "scenario" / name)
    return (BUNDLES / case).resolve()
