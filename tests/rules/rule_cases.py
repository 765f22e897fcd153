"""Helpers of the rule-set suite: the loaded rule set and profiles, facts edited per case."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from sitscheck.engine.cel import CelEnvironment
from sitscheck.engine.evaluate import evaluate_rules
from sitscheck.engine.loader import load_profiles, load_rules, rule_files
from sitscheck.engine.model import Profile, RuleSet
from sitscheck.models import CheckResult, Status, Verdict
from sitscheck.report.assemble import mark_explanations

ENV = CelEnvironment()
RULESET = load_rules(rule_files([]), ENV)
PROFILES = load_profiles([])

Edits = dict[str, dict[str, Any]]  # "check" (node facts) or "check@gpu" -> {dotted path: value}


@dataclass(frozen=True)
class Case:
    """A rule over a recorded bundle's check results, edited: the GPUs (None: the node) it
    must fire on, none when it must keep quiet."""

    name: str
    rule: str
    edits: Edits
    fires_on: tuple[int | None, ...] = ()
    profile: str | dict[str, Any] | None = "h200-sxm"
    site: dict[str, Any] = field(default_factory=dict)
    base: str = "idle"  # the bundle whose results are edited (the recorded idle 2×H200)


def telemetry(gpu: int, *parts: dict[str, Any]) -> Edits:
    merged: dict[str, Any] = {}
    for part in parts:
        merged.update(part)
    return {f"gpu_telemetry@{gpu}": merged}


def merge(*edits: Edits) -> Edits:
    out: Edits = {}
    for edit in edits:
        for key, values in edit.items():
            out.setdefault(key, {}).update(values)
    return out


def stats(value: float) -> dict[str, float]:
    return {"min": value, "mean": value, "p95": value, "max": value}


def edited(results: list[CheckResult], edits: Edits) -> list[CheckResult]:
    out = copy.deepcopy(results)
    by_name = {r.name: r for r in out}
    for key, values in edits.items():
        check, _, gpu = key.partition("@")
        facts = by_name[check].facts
        target = facts if not gpu else next(g for g in facts["gpus"] if g["index"] == int(gpu))
        for path, value in values.items():
            _set(target, path, copy.deepcopy(value))
    return out


def _set(record: Any, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        record = record[int(part)] if isinstance(record, list) else record.setdefault(part, {})
    if value is None and isinstance(record, dict):
        record.pop(last, None)
    elif isinstance(record, list):
        record[int(last)] = value
    else:
        record[last] = value


def profile_of(spec: str | dict[str, Any] | None) -> Profile | None:
    if spec is None:
        return None
    if isinstance(spec, str):
        return PROFILES[spec]
    return Profile(spec["name"], "test.yaml", spec, spec.get("params", {}))


def evaluate(
    results: list[CheckResult], profile: Profile | None, site: dict[str, Any] | None = None
) -> list[Verdict]:
    ruleset = RULESET
    if site:
        ruleset = RuleSet(RULESET.rules, RULESET.params, site)
    return mark_explanations(evaluate_rules(ruleset, results, profile, ENV))


def fired_on(verdicts: list[Verdict], rule: str) -> list[int | None]:
    """GPUs (None: the node) a rule fired on, info rules included (their status stays ok:
    one fired on a GPU names it, one fired node-wide says more than its description)."""
    out = []
    for v in verdicts:
        if v.rule != rule or v.status in (Status.UNKNOWN, Status.SKIPPED):
            continue
        if v.status != Status.OK or v.device is not None or v.message != default_message(rule):
            out.append(v.device.index if v.device else None)
    return sorted(out, key=lambda i: -1 if i is None else i)


def default_message(rule: str) -> str | None:
    """The message of a rule's verdict where it did not fire (the first line of its
    description, as the engine writes it); None for a rule the set does not hold."""
    found = RULESET.by_id(rule)
    if found is None:
        return None
    return (found.description or found.id).strip().splitlines()[0]


def assert_fires_exactly(case: Case, results: list[CheckResult]) -> list[Verdict]:
    """`case.rule` over `results` edited by the case: judged (never UNKNOWN or SKIPPED),
    fired on exactly `case.fires_on`, every placeholder of its messages read. Its verdicts."""
    verdicts = evaluate(edited(results, case.edits), profile_of(case.profile), case.site)
    mine = [v for v in verdicts if v.rule == case.rule]
    assert mine, f"{case.rule}: no verdict"
    assert not [v for v in mine if v.status in (Status.UNKNOWN, Status.SKIPPED)], [
        (v.status, v.reason) for v in mine
    ]
    assert fired_on(verdicts, case.rule) == list(case.fires_on), [v.message for v in mine]
    for verdict in mine:
        assert "?" not in verdict.message, verdict.message  # every placeholder was read
    return mine
