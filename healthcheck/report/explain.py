"""`sitscheck explain CODE`: what a rule or finding code means, its evidence and what to do.

Pure: looks a code up in a loaded rule set (rule ids) or in the code tables the checks declare
(`CodeSpec`s: a plugin's codes as well as the built-ins', the Xid catalog among them), and
renders it as text. Nothing here touches the host.
"""

from __future__ import annotations

import difflib
import re
import textwrap
from collections.abc import Sequence
from typing import Any

from msgspec import Struct, field

from ..contract.declarations import CodeSpec, declaration_of
from ..engine.model import Rule, RuleSet
from ..errors import ConfigError
from ..printable import printable

WIDTH = 100
LABEL = 14
_GPU_FACT = re.compile(r"\bgpu\.([a-z_]+)\.([a-z_][a-z0-9_.]*)")
_NODE_FACT = re.compile(r"\bchecks\.([a-z_]+)\.(facts|metrics|status|findings)\b([a-z0-9_.]*)")
_PARAM = re.compile(r"\bparams\.([a-z_][a-z0-9_]*)")
_PROFILE = re.compile(r"\bprofile\.([a-z_][a-z0-9_.]*)")
_FINDINGS = re.compile(r"(?<![.\w])findings\b")
_MACROS = {"exists", "exists_one", "all", "filter", "map", "size", "contains"}


class Explanation(Struct, frozen=True):
    """What a code is, as ordered label/value rows under a title."""

    code: str
    kind: str  # "rule", "xid", "sxid", "finding"
    title: str
    rows: list[tuple[str, str]] = field(default_factory=list)


def explain(code: str, ruleset: RuleSet, checks: Sequence[Any] = ()) -> Explanation:
    """The explanation of `code`: a rule id, or a finding code of one of `checks` (in its own
    spelling, e.g. `Xid 79`); ConfigError (with close matches) when nothing is named so."""
    wanted = code.strip().lower()
    rule = ruleset.by_id(wanted) or ruleset.by_id(code.strip())
    if rule is not None:
        return _rule(rule, ruleset, checks)
    for check in checks:
        if not hasattr(check, "collect"):
            continue
        table = declaration_of(check).codes
        named = table.normalise(code)
        spec = table.get(named) if named is not None else None
        if spec is not None:
            return _finding(spec, check, ruleset)
    known = [r.id for r in ruleset.rules] + [
        spec.code
        for check in checks
        if hasattr(check, "collect")
        for spec in declaration_of(check).codes
    ]
    close = difflib.get_close_matches(wanted, known, n=4, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ConfigError(
        f"no rule, Xid or finding code named {code!r} (rule ids: sitscheck rules list; "
        f"Xids: xid.N / sxid.N; finding codes: <check>.<name>){hint}"
    )


def render(explanation: Explanation) -> str:
    """The explanation as text, every line made printable: a site's rule file (its id, its
    message, its CEL) is text from a file, shown, never obeyed by the terminal."""
    lines = [explanation.title]
    for label, value in explanation.rows:
        lines.extend(_wrapped(label, value))
    return "\n".join(printable(line) for line in lines) + "\n"


def explain_text(code: str, ruleset: RuleSet, checks: Sequence[Any] = ()) -> str:
    return render(explain(code, ruleset, checks))


# --------------------------------------------------------------------------- rules


def _rule(rule: Rule, ruleset: RuleSet, checks: Sequence[Any]) -> Explanation:
    where = f"{_short(rule.file)}:{rule.line}"
    rows = [
        ("meaning", (rule.description or rule.id).strip()),
        ("layer", rule.layer.value),
        (
            "severity",
            rule.severity.value
            + (" (shown, never changes a status)" if rule.severity.value == "info" else ""),
        ),
        ("scope", "each GPU" if rule.scope == "gpu" else "the node"),
        ("source", (rule.source or "-").strip()),
        ("file", f"{rule.file}:{rule.line}"),
    ]
    needed, reads = _reads(rule)
    said = {c.name: declaration_of(c).evidence.summary for c in checks if hasattr(c, "collect")}
    evidence = [f"{c}: {said[c]}" if said.get(c) else c for c in needed]
    rows.append(("evidence", "; ".join(evidence) or "no check"))
    if reads:
        rows.append(("reads", ", ".join(reads)))
    params = _params(rule, ruleset)
    if params:
        rows.append(("params", params))
    keys = sorted({_trim(k) for k in _PROFILE.findall(_texts(rule))})
    profile_keys = [k for k in keys if not any(o.startswith(k + ".") for o in keys)]
    if profile_keys:
        rows.append(("profile", ", ".join(profile_keys) + " (from the hardware profile)"))
    if rule.guard is not None:
        rows.append(("applies when", _flat(rule.guard.text)))
    rows.append(("fires when", _flat(rule.when.text)))
    if rule.explains:
        rows.append(("explains", ", ".join(rule.explains)))
    causes = _explained_by(rule.id, ruleset)
    if causes:
        rows.append(("explained by", ", ".join(causes)))
    rows.append(("action", _flat(rule.action) if rule.action else "-"))
    return Explanation(rule.id, "rule", f"{rule.id}: rule ({where})", rows)


def _reads(rule: Rule) -> tuple[list[str], list[str]]:
    """The checks a rule needs and the fact paths its expressions read (longest paths only)."""
    text = _texts(rule)
    paths: list[str] = []
    for check, path in _GPU_FACT.findall(text):
        paths.append(f"gpu.{check}.{_trim(path)}")
    for check, part, rest in _NODE_FACT.findall(text):
        paths.append(f"checks.{check}.{_trim(part + rest)}")
    if _FINDINGS.search(text):
        paths.append("findings")
    unique = sorted(set(paths))
    longest = [p for p in unique if not any(o.startswith(p + ".") for o in unique)]
    checks = [c for c in rule.requires if c != "profile"]
    named = [p.split(".")[1] for p in longest if p.startswith(("gpu.", "checks."))]
    return list(dict.fromkeys([*checks, *named])), longest


def _trim(path: str) -> str:
    parts = [p for p in path.strip(".").split(".") if p]
    while parts and parts[-1] in _MACROS:
        parts.pop()
    return ".".join(parts)


def _params(rule: Rule, ruleset: RuleSet) -> str:
    names = sorted(set(_PARAM.findall(_texts(rule))))
    shown = []
    for name in names:
        if name in ruleset.site_params:
            shown.append(f"{name} = {ruleset.site_params[name]} (site file)")
        elif name in ruleset.params:
            shown.append(f"{name} = {ruleset.params[name]}")
        else:
            shown.append(f"{name} (not set: the rule cannot be judged)")
    if not shown:
        return ""
    return "; ".join(shown) + " (a hardware profile's params may override them)"


def _texts(rule: Rule) -> str:
    exprs = [rule.when.text, rule.guard.text if rule.guard else "", rule.message]
    return "\n".join(exprs)


# --------------------------------------------------------------------------- findings


def _finding(spec: CodeSpec, check: Any, ruleset: RuleSet) -> Explanation:
    declaration = declaration_of(check)
    severity = spec.severity.value + (f" ({spec.severity_note})" if spec.severity_note else "")
    rows = [("meaning", spec.meaning)]
    if spec.name:
        rows.append(("name", spec.name))
    rows += [
        ("layer", f"{check.layer.value} (raised by the {check.name} check)"),
        ("severity", severity),
        ("kind", spec.kind.value),
        ("source", f"the {check.name} check (no threshold: decided from the evidence alone)"),
        ("evidence", declaration.evidence.summary or "-"),
    ]
    causes = _explained_by(spec.code, ruleset)
    if causes:
        rows.append(("explained by", ", ".join(causes)))
    rows.append(("action", spec.action))
    rows.append(("category", spec.category.value))
    title = f"{spec.code}: {spec.name or f'finding of the {check.name} check'}"
    return Explanation(spec.code, "finding", title, rows)


# --------------------------------------------------------------------------- helpers


def _explained_by(code: str, ruleset: RuleSet) -> list[str]:
    """Rules that name `code` as one of their symptoms (cause first when both fire)."""
    return [r.id for r in ruleset.rules if code in r.explains]


def _short(path: str) -> str:
    marker = "/rules/"
    return path[path.rindex(marker) + 1 :] if marker in path else path


def _flat(text: str) -> str:
    return " ".join(text.split())


def _wrapped(label: str, value: str) -> list[str]:
    head = f"  {label + ':':<{LABEL}} "
    return textwrap.wrap(
        _flat(value),
        width=WIDTH,
        initial_indent=head,
        subsequent_indent=" " * len(head),
        break_on_hyphens=False,
        break_long_words=False,
    ) or [head.rstrip()]
