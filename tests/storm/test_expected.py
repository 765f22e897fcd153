"""Every recorded bundle, storm and kernel-log corpus sample gives the report kept for it in
`expected/` (see `reports.py`): facts, findings, metrics and verdicts. A difference fails with
the unified diff of the two files' text; `pytest tests/storm --update-expected` rewrites them
from the code under test."""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from reports import EXPECTED, cases, dumps, path_of  # noqa: E402

CASES = cases()


def test_every_case_has_its_file_and_every_file_its_case(request: pytest.FixtureRequest) -> None:
    kept = {str(p.relative_to(EXPECTED).with_suffix("")): p for p in EXPECTED.rglob("*.json")}
    if request.config.getoption("--update-expected"):  # a case gone: its file goes too
        for case in set(kept) - set(CASES):
            kept.pop(case).unlink()
    else:
        assert sorted(kept) == sorted(CASES), "run `pytest tests/storm --update-expected`"
    assert sum(c.startswith("bundles/") for c in CASES) >= 30
    assert sum(c.startswith("corpus/") for c in CASES) >= 40
    assert sorted(c for c in CASES if c.startswith("storms/")) == [
        "storms/bracket",
        "storms/kmsg",
        "storms/relative",
        "storms/syslog",
    ]


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_case_gives_its_expected_report(
    case: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    now = dumps(CASES[case](tmp_path))
    path = path_of(case)
    if request.config.getoption("--update-expected"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(now, encoding="utf-8")
        return
    assert path.is_file(), f"{path}: missing; run `pytest tests/storm --update-expected`"
    kept = path.read_text(encoding="utf-8")
    if now != kept:
        where = list(_changes(json.loads(kept), json.loads(now), ""))
        diff = difflib.unified_diff(
            kept.splitlines(), now.splitlines(), f"{path} (expected)", "now", lineterm="", n=3
        )
        message = [f"{case}: the report differs from the expected one", *where[:20], *diff]
        pytest.fail("\n".join(message), False)


def _changes(kept: Any, now: Any, where: str) -> Iterator[str]:
    """Where two records differ, as `path: expected -> now`."""
    if isinstance(kept, dict) and isinstance(now, dict):
        for key in sorted(set(kept) | set(now)):
            yield from _changes(kept.get(key), now.get(key), f"{where}.{key}".lstrip("."))
    elif isinstance(kept, list) and isinstance(now, list) and len(kept) == len(now):
        for number, (a, b) in enumerate(zip(kept, now, strict=True)):
            yield from _changes(a, b, f"{where}[{number}]")
    elif kept != now:
        yield f"  {where}: {json.dumps(kept)[:80]} -> {json.dumps(now)[:80]}"
