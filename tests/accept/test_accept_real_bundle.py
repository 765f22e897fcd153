"""The real 1x H200 acceptance run (`sitscheck accept --collect`, default budget, on the test
H200: docs/ACCEPTANCE.md "Measured on the test H200") replays with the facts and verdicts the
live run reported. `data/h200x1-accept-v1.live.json` holds what the live run's JSON report
said (each check's status, the acceptance checks' facts, every verdict's status)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent
BUNDLE = TESTS / "bundles" / "h200x1-accept-v1"
LIVE = json.loads((TESTS / "accept" / "data" / "h200x1-accept-v1.live.json").read_text())
# where a fact names where it was read from (the live probe, or the bundle's file)
WHERE = {"source", "ref", "probe", "index_source"}


def replayed(tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "sitscheck", "run", "--from", str(BUNDLE), "-o", f"json={out}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def test_the_real_acceptance_run_replays_as_it_was_judged_live(tmp_path: Path) -> None:
    report = replayed(tmp_path)
    assert report["status"] == LIVE["status"] == "ok"
    assert {c["name"]: c["status"] for c in report["checks"]} == LIVE["check_status"]
    facts = {c["name"]: c.get("facts") for c in report["checks"]}
    for name in ("memtest", "compute", "soak", "multigpu"):
        assert facts[name] == LIVE["checks"][name]["facts"], name
    bandwidth = LIVE["checks"]["bandwidth"]["facts"]
    assert {k: v for k, v in facts["bandwidth"].items() if k not in WHERE} == {
        k: v for k, v in bandwidth.items() if k not in WHERE
    }
    statuses = {v["rule"]: v["status"] for v in report["verdicts"]}
    assert {rule: statuses.get(rule) for rule, _, _ in LIVE["verdicts"]} == {
        rule: status for rule, status, _ in LIVE["verdicts"]
    }


def test_the_real_run_is_a_healthy_h200_at_its_power_cap(tmp_path: Path) -> None:
    """What the issue calls healthy, as the live run measured it: at the 700 W cap with the SW
    power cap set and clocks below maximum, no hardware slowdown, bit-identical repeats."""
    (gpu,) = LIVE["checks"]["soak"]["facts"]["gpus"]
    assert gpu["power_w"]["median"] > 0.95 * gpu["power_limit_w"]
    assert gpu["reasons_s"]["sw_power_cap"] > 0.9 * gpu["seconds"]
    assert all(gpu["reasons_s"][k] == 0 for k in gpu["reasons_s"] if k.startswith("hw_"))
    (compute,) = LIVE["checks"]["compute"]["facts"]["gpus"]
    assert compute["mismatched_repeats"] == [] and compute["repeats"] > 100
    (memtest,) = LIVE["checks"]["memtest"]["facts"]["gpus"]
    assert memtest["bad_words"] == 0 and memtest["passes"] > 10
