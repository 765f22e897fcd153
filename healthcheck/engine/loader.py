"""Load and validate rule files and hardware profiles, with file:line errors.

Rule files (YAML): an optional `params` mapping (named thresholds any site file can override
without copying a rule) and a `rules` list. Later files override earlier ones: a rule with
the same `id` replaces it, and `params` keys are merged. Profiles (`profiles/*.yaml`)
describe a GPU model: what the node should be, and params for its rules.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any, get_args

from ..errors import RuleError
from ..models import ActionCategoryName, Layer, Severity
from .budget import passed
from .cel import CelEnvironment
from .model import CompiledExpr, Profile, Rule, RuleSet, Scope
from .yaml_lines import LinedDict, line_of, load_yaml, value_line_of

RULE_KEYS = frozenset(
    "id scope when guard severity message requires action action_category source layer "
    "explains description".split()
)
REQUIRED_RULE_KEYS = ("id", "when", "severity", "message")
# The keys that name one of a few values (all but severity may be left unset).
CHOICES: dict[str, tuple[str, ...]] = {
    "scope": get_args(Scope),
    "severity": ("info", "warning", "critical"),
    "layer": tuple(layer.value for layer in Layer),
    "action_category": get_args(ActionCategoryName),
}
RULES_GROUP = "sitscheck.rules"
PROFILES = "profiles"  # the folder of a rule folder that holds its hardware profiles


def builtin_rules_dir() -> Path:
    return Path(str(resources.files("sitscheck.rules")))


def shipped_rules_dirs() -> list[Path]:
    """The folders of rule files that packages ship (entry-point group `sitscheck.rules`,
    each naming a package whose `*.yaml` are rule files and `profiles/*.yaml` profiles):
    sitscheck's own first, then plugins' by entry-point name. Their `params` are shipped
    defaults (below hardware profiles and site files), never site params."""
    from ..contract.plugins import entry_points

    folders = [builtin_rules_dir()]
    for entry in sorted(entry_points(RULES_GROUP), key=lambda e: e.name):
        try:
            folder = Path(str(resources.files(entry.value.partition(":")[0])))
        except (ModuleNotFoundError, TypeError, ValueError) as exc:
            raise RuleError(entry.value, f"rule package of plugin {entry.name}: {exc}", 1) from exc
        if folder.resolve() not in {f.resolve() for f in folders}:  # sitscheck's own: first
            folders.append(folder)
    return folders


def _shipped(shipped: list[Path] | None) -> list[Path]:
    """`shipped_rules_dirs()`, unless the caller looked them up already (`shipped`)."""
    return shipped_rules_dirs() if shipped is None else shipped


def rule_files(dirs: list[Path], shipped: list[Path] | None = None) -> list[Path]:
    """Shipped rule files first (sitscheck's, then plugins'), then each extra directory's
    (or file's) in name order. `shipped`: `shipped_rules_dirs()`, where the caller has it."""
    files = [path for folder in _shipped(shipped) for path in sorted(folder.glob("*.yaml"))]
    for location in dirs:
        if location.is_file():
            files.append(location)
        elif location.is_dir():
            files.extend(sorted(location.glob("*.yaml")))
    return files


def load_rules(
    files: list[Path],
    env: CelEnvironment | None = None,
    deadline: float | None = None,
    shipped: list[Path] | None = None,
) -> RuleSet:
    """Every rule of `files`, validated and compiled. Past `deadline` (time.monotonic())
    the rules left are kept uncompiled (their verdicts UNKNOWN, `evaluate.NOT_COMPILED`).
    `shipped`: `shipped_rules_dirs()`, where the caller has it."""
    env = env or CelEnvironment()
    late = False  # past the deadline: the rules left stay uncompiled
    rules: dict[str, Rule] = {}
    params: dict[str, Any] = {}
    site_params: dict[str, Any] = {}
    site_param_lines: dict[str, tuple[str, int]] = {}
    every_rule: list[Rule] = []  # replaced ones too: a param one of them reads is no typo
    shipped_folders = {folder.resolve() for folder in _shipped(shipped)}
    for path in files:
        data = load_yaml(path)
        if data is None:
            continue
        if not isinstance(data, dict):
            raise RuleError(str(path), "a rule file is a mapping with `rules:` and/or `params:`", 1)
        unknown = set(data) - {"rules", "params", "profile"}
        if unknown:
            key = sorted(unknown)[0]
            raise RuleError(str(path), f"unknown top-level key {key!r}", line_of(data, key))
        file_params = data.get("params") or {}
        if not isinstance(file_params, dict):
            raise RuleError(str(path), "`params` must be a mapping", line_of(data, "params"))
        if path.resolve().parent in shipped_folders:
            params.update(file_params)
        else:
            site_params.update(file_params)
            for key in file_params:
                site_param_lines[key] = (str(path), value_line_of(file_params, key))
        entries = data.get("rules") or []
        if not isinstance(entries, list):
            raise RuleError(str(path), "`rules` must be a list", line_of(data, "rules"))
        for position, entry in enumerate(entries):
            late = late or passed(deadline)
            rule = _rule(None if late else env, path, entry, line_of(entries, position))
            rules[rule.id] = rule
            every_rule.append(rule)
    _refuse_unread_params(site_param_lines, params, every_rule)
    return RuleSet(tuple(rules.values()), params, site_params)


_PARAM_READ = re.compile(r"\bparams\.([A-Za-z_][A-Za-z0-9_]*)")


def _refuse_unread_params(
    site: dict[str, tuple[str, int]], shipped: dict[str, Any], rules: Iterable[Rule]
) -> None:
    """A site param that no shipped file sets and no rule reads is a misspelling (it would
    change nothing and say nothing): the file and line, with the closest known names."""
    read: set[str] = set()
    for rule in rules:
        texts = [rule.when.text, rule.guard.text if rule.guard else "", rule.message]
        for text in texts:
            read.update(_PARAM_READ.findall(text))
    known = set(shipped) | read
    for key, (path, line) in site.items():
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise RuleError(path, f"param {key!r} is read by no rule{hint}", line)


def _rule(env: CelEnvironment | None, path: Path, entry: Any, line: int) -> Rule:
    """One rule, checked, its expressions compiled by `env` (None: left uncompiled)."""
    file = str(path)
    if not isinstance(entry, LinedDict):
        raise RuleError(file, "each rule is a mapping", line)
    for key in entry:
        if key not in RULE_KEYS:
            raise RuleError(file, f"unknown rule key {key!r}", line_of(entry, key))
    for key in REQUIRED_RULE_KEYS:
        if key not in entry:
            raise RuleError(file, f"rule is missing {key!r}", line)
    rule_id, message = _text(entry, "id", file), _text(entry, "message", file)
    for key, allowed in CHOICES.items():
        value = entry.get(key)
        if (value is not None or key == "severity") and value not in allowed:
            where = line_of(entry, key)
            raise RuleError(file, f"{rule_id}: {key} must be one of {sorted(allowed)}", where)

    def compiled(key: str) -> CompiledExpr:
        text, where = _text(entry, key, file), value_line_of(entry, key)
        return CompiledExpr(text, None) if env is None else env.compile(text, file, where)

    where = value_line_of(entry, "message")
    return Rule(
        id=rule_id,
        scope=entry.get("scope") or "node",
        when=compiled("when"),
        guard=compiled("guard") if entry.get("guard") else None,
        severity=Severity(entry["severity"]),
        message=message,
        placeholders=() if env is None else env.placeholders(message, file, where),
        file=file,
        line=line,
        requires=_names(entry, "requires", file),
        action=entry.get("action"),
        action_category=entry.get("action_category"),
        source=entry.get("source"),
        layer=Layer(entry.get("layer") or "runtime"),
        explains=_names(entry, "explains", file),
        description=entry.get("description"),
    )


def _text(entry: LinedDict, key: str, file: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise RuleError(file, f"{key!r} must be a non-empty string", line_of(entry, key))
    return value


def _names(entry: LinedDict, key: str, file: str) -> tuple[str, ...]:
    value = entry.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RuleError(file, f"{key!r} must be a list of names", line_of(entry, key))
    return tuple(value)


def load_profiles(dirs: list[Path], shipped: list[Path] | None = None) -> dict[str, Profile]:
    """Shipped profiles (sitscheck's, then plugins' keys for the same profiles), then site
    ones (`profiles/*.yaml` in each extra dir), merged by name. `shipped`:
    `shipped_rules_dirs()`, where the caller has it."""
    site = profile_files([d for d in dirs if d.is_dir()])
    profiles: dict[str, Profile] = {}
    schema = None  # the profile schema, made for the first site profile (shipped ones pass)
    for path in profile_files(_shipped(shipped)) + site:
        data = load_yaml(path)
        if path in site:  # a site's profile: an unknown key or a wrong type is refused
            if schema is None:
                from ..contract.registry import discover
                from .profile_schema import ProfileSchema

                schema = ProfileSchema.of_checks(discover())
            for problem in schema.problems(str(path), data):
                raise problem
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            raise RuleError(str(path), "a profile is a mapping with a `name`", 1)
        params = data.get("params") or {}
        if not isinstance(params, dict):
            raise RuleError(str(path), "`params` must be a mapping", line_of(data, "params"))
        base = profiles.get(data["name"])
        merged = {**(base.data if base else {}), **data}
        profiles[data["name"]] = Profile(
            data["name"], str(path), merged, {**(base.params if base else {}), **params}
        )
    return profiles


def profile_files(folders: list[Path]) -> list[Path]:
    """The profiles of rule folders: each one's `profiles/*.yaml`, in name order."""
    return [p for folder in folders for p in sorted((folder / PROFILES).glob("*.yaml"))]
