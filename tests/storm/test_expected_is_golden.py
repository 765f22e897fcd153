"""The proof that `expected/` holds what `data/golden.json` held (this commit only: the next
one deletes both this file and the digest file). For every case of the golden file, the
expected file, read back into the golden file's form (its verdicts in full, its checks'
metrics as the report's JSON, its checks other than pcie_aer and xid as a status and a
digest), equals the golden entry, digests included."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from reports import default_message, digest, metric_of, path_of  # noqa: E402
from sitscheck.models import CheckResult  # noqa: E402

GOLDEN: dict[str, Any] = json.loads((HERE / "data" / "golden.json").read_text())
KERNEL = ("pcie_aer", "xid")


def _case(section: str, name: str) -> str:
    if section == "bundles":
        return "bundles/" + name.removeprefix("tests/bundles/")
    if section == "corpus":
        return "corpus/" + name.removesuffix(".txt")
    return f"storms/{name}"


def _rule_order() -> dict[str, int]:
    from reports import _default_messages

    return {rule: n for n, rule in enumerate(_default_messages())}


def _all_verdicts(new: dict[str, Any]) -> list[list[Any]]:
    rows = [
        [v["rule"], v["status"], v["gpu"], v["message"], v.get("reason")] for v in new["verdicts"]
    ]
    rows += [[r, "ok", None, default_message(r), None] for r in new["ok"]]
    rows += [
        [r, "skipped", None, default_message(r), reason]
        for reason, rules in new["skipped"].items()
        for r in rules
    ]
    order = _rule_order()
    return sorted(rows, key=lambda row: order[row[0]])  # stable: a rule's own order kept


def _old_form(new: dict[str, Any]) -> dict[str, Any]:
    rows = _all_verdicts(new)
    checks: dict[str, Any] = {}
    for name, body in new["checks"].items():
        if "metrics" in body:
            body = {**body, "metrics": [metric_of(line) for line in body["metrics"]]}
        full = CheckResult.model_validate(body).model_dump(mode="json", exclude={"duration_s"})
        full = json.loads(json.dumps(full, sort_keys=True))
        checks[name] = full if name in KERNEL else [full["status"], digest(full)]
    return {
        "status": new["status"],
        "exit_code": new["exit_code"],
        "headline": new["headline"],
        "verdicts": [row for row in rows if row[1] not in ("ok", "skipped")],
        "verdicts_digest": digest(rows),
        "checks": checks,
    }


CASES = [(s, n) for s in ("bundles", "storms", "corpus") for n in sorted(GOLDEN[s])]


@pytest.mark.parametrize(("section", "name"), CASES)
def test_the_expected_file_holds_what_the_golden_file_held(section: str, name: str) -> None:
    new = json.loads(path_of(_case(section, name)).read_text(encoding="utf-8"))
    if section == "corpus":
        now = {"events": new["events"], "replay": _old_form(new["replay"])}
    else:
        now = _old_form(new)
    assert now == GOLDEN[section][name]


def test_every_golden_case_has_an_expected_file() -> None:
    assert len(CASES) == 33 + 4 + 51
    assert all(path_of(_case(s, n)).is_file() for s, n in CASES)
