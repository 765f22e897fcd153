"""`python -m benchmarks.rules_bench BUNDLE [ENGINE]`: the rules over a bundle's check results.

The checks run first (not timed, under generous deadlines); then the rule files are loaded
and compiled and every rule evaluated, timed (wall and CPU). Prints one JSON line.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path


def main(bundle: str, engine: str | None) -> dict[str, object]:
    from sitscheck.app import _gpu_count, selected_checks
    from sitscheck.config import RunConfig
    from sitscheck.contract.runner import run_checks
    from sitscheck.engine.cel import CelEnvironment
    from sitscheck.engine.evaluate import evaluate_rules
    from sitscheck.engine.loader import load_profiles, load_rules, rule_files
    from sitscheck.engine.profiles import select_profile
    from sitscheck.sources.replay import ReplaySources

    config = RunConfig(check_timeout_s=600, run_timeout_s=900)
    results = run_checks(selected_checks(config), ReplaySources(Path(bundle), label=bundle), config)
    wall, cpu = time.perf_counter(), time.process_time()
    env = CelEnvironment(engine)
    ruleset = load_rules(rule_files([]), env)
    profile = select_profile(load_profiles([]), None, results)
    node = {"gpu_count": _gpu_count(results), "expect_gpus": None}
    verdicts = evaluate_rules(ruleset, results, profile, env, node)
    return {
        "engine": env.engine,
        "wall_s": round(time.perf_counter() - wall, 3),
        "cpu_s": round(time.process_time() - cpu, 3),
        "verdicts": dict(Counter(v.status.value for v in verdicts)),
        "unknown": sorted({v.rule for v in verdicts if v.status.value == "unknown"}),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)))
