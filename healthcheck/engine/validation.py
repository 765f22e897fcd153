"""`sitscheck rules validate`: rule files against the declared facts, profiles against theirs.

Each rule file must load (`loader.load_rules`: keys, severities, CEL that compiles), and
every fact path its expressions read and every check it `requires` must be declared
(`fact_paths`). Each profile file (a file in a `profiles/` folder) must hold only keys of
the profile schema, each of its type (`profile_schema`). Every problem is one error naming
file and line; one file's problems never hide another's.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Any

from msgspec import Struct, field

from ..errors import RuleError
from .loader import PROFILES, load_rules, profile_files, rule_files, shipped_rules_dirs
from .yaml_lines import load_yaml


class Outcome(Struct):
    """What `sitscheck rules validate` found: the problems, the counts it checked and its notes."""

    problems: list[RuleError] = field(default_factory=list)
    rules: int = 0
    rule_files: int = 0
    profiles: int = 0
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        text = f"ok: {self.rules} rules in {self.rule_files} files, {self.profiles} profiles"
        return "; ".join([text, *self.notes])


def targets(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """(rule files, profile files) to validate: the given files (a file in a `profiles/`
    folder is a profile), each given folder's `*.yaml` and `profiles/*.yaml`; with none
    given, every shipped one (sitscheck's and plugins')."""
    if not paths:
        return rule_files([]), profile_files(shipped_rules_dirs())
    rules: list[Path] = []
    profiles: list[Path] = []
    for path in paths:
        if path.is_dir():
            rules.extend(sorted(path.glob("*.yaml")))
            profiles.extend(profile_files([path]))
        elif path.parent.name == PROFILES:
            profiles.append(path)
        else:
            rules.append(path)
    return rules, profiles


def validate(paths: list[Path]) -> Outcome:
    from .cel import CelEnvironment
    from .fact_paths import rule_file_problems

    rules, profiles = targets(paths)
    outcome = Outcome(rule_files=len(rules), profiles=len(profiles))
    declared = _Declared()
    env = CelEnvironment()
    for path in rules:
        try:
            ruleset = load_rules([path], env)
        except RuleError as exc:
            outcome.problems.append(exc)
            continue
        outcome.rules += len(ruleset.rules)
        problems = rule_file_problems(path, ruleset.rules, declared.activation)
        outcome.problems.extend(problems)
    for path in profiles:
        try:
            data = load_yaml(path)
        except RuleError as exc:
            outcome.problems.append(exc)
            continue
        outcome.problems.extend(declared.profile.problems(str(path), data))
    unmodelled = declared.activation.unmodelled if "activation" in vars(declared) else ()
    if unmodelled:
        outcome.notes = [f"facts of {', '.join(unmodelled)} not checked (no facts model declared)"]
    return outcome


class _Declared:
    """The checks' declarations, read when first needed (a file that does not even load needs
    none: no check or facts model is imported for it)."""

    @cached_property
    def checks(self) -> list[Any]:
        from ..contract.registry import discover

        return list(discover())

    @cached_property
    def profile(self) -> Any:
        from .profile_schema import ProfileSchema

        return ProfileSchema.of_checks(self.checks)

    @cached_property
    def activation(self) -> Any:
        from .fact_schema import activation

        return activation(self.checks, self.profile.json_schema())
