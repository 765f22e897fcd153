"""Old engine vs new (issue 19): every recorded bundle gives the same facts and verdicts.

`data/engine-before.json` was written by `engine_snapshot.py` with the code before the
engine change (celpy only, the rule files' per-GPU joins over every record, the YAML read
twice, AER/Xid events kept whole). Each bundle is replayed now with each CEL engine
installed: every check's status and facts (storm fields aside: `event_count`, `groups`)
and every verdict (rule, status, GPU, message, whether a reason is given) must be the same.
Checks added since are left out of the comparison (`_known_to`), and so are facts fields
added to a check since (`engine_snapshot.ADDED_FACTS`) where they hold the value every
snapshot bundle must give them (none of them was recorded by a run that fills the field).
"""

from __future__ import annotations

import json
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
from engine_snapshot import ADDED_FACTS, bundles, snapshot
from sitscheck.engine import cel

HERE = Path(__file__).resolve().parent
BEFORE: dict[str, Any] = json.loads((HERE / "data" / "engine-before.json").read_text())
ENGINES = [
    pytest.param(
        name,
        marks=pytest.mark.skipif(find_spec(module) is None, reason=f"{module} not installed"),
    )
    for name, module in ((cel.GOOGLE, "cel_expr_python"), (cel.CELPY, "celpy"))
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return bundles(tmp_path_factory.mktemp("bundles"))


def test_every_snapshot_bundle_is_still_recorded(recorded: dict[str, Path]) -> None:
    """Bundles recorded after the engine change have no old-engine snapshot; each one that
    has must still be there (a renamed or lost bundle would silently leave the test)."""
    assert set(BEFORE) <= set(recorded)
    assert len(BEFORE) >= 30


@pytest.mark.parametrize("engine", ENGINES)
def test_every_bundle_gives_the_old_facts_and_verdicts(
    recorded: dict[str, Path], engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cel, "default_engine", lambda: engine)
    differ = []
    for name, path in recorded.items():
        if name not in BEFORE:
            continue
        now = _known_to(BEFORE[name], snapshot(path, ADDED_FACTS))
        if now != BEFORE[name]:
            differ.append((name, _difference(BEFORE[name], now)))
    assert not differ, differ


def _known_to(before: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """`now` without what did not exist when `before` was taken: checks added since (their
    facts and their rules' verdicts are new, not a difference of the engine)."""
    rules = {v[0] for v in before["verdicts"]}
    return {
        **now,
        "checks": {k: v for k, v in now["checks"].items() if k in before["checks"]},
        "verdicts": [v for v in now["verdicts"] if v[0] in rules],
    }


def _difference(before: dict[str, Any], now: dict[str, Any]) -> list[Any]:
    out: list[Any] = [
        (check, before["checks"].get(check), now["checks"].get(check))
        for check in sorted(set(before["checks"]) | set(now["checks"]))
        if before["checks"].get(check) != now["checks"].get(check)
    ]
    old = [tuple(v) for v in before["verdicts"]]
    new = [tuple(v) for v in now["verdicts"]]
    out.extend(("only before", v) for v in old if v not in new)
    out.extend(("only now", v) for v in new if v not in old)
    return out
