"""`sitscheck explain CODE`: what a rule or finding code means, its evidence and what to do.

Pure: looks a code up in a loaded rule set (rule ids), the Xid catalog (`xid.N`, `sxid.N`) or
the checks' finding codes (`codes.py`), and renders it as text. Nothing here touches the host.
"""

from __future__ import annotations

import difflib
import re
import textwrap
from dataclasses import dataclass, field

from . import codes
from .engine.model import Rule, RuleSet
from .errors import ConfigError

WIDTH = 100
LABEL = 14
_XID = re.compile(r"^(?P<kind>s?xid)?[\s._:-]*(?P<number>\d+)$")
_GPU_FACT = re.compile(r"\bgpu\.([a-z_]+)\.([a-z_][a-z0-9_.]*)")
_NODE_FACT = re.compile(r"\bchecks\.([a-z_]+)\.(facts|metrics|status|findings)\b([a-z0-9_.]*)")
_PARAM = re.compile(r"\bparams\.([a-z_][a-z0-9_]*)")
_PROFILE = re.compile(r"\bprofile\.([a-z_][a-z0-9_.]*)")
_FINDINGS = re.compile(r"(?<![.\w])findings\b")
_MACROS = {"exists", "exists_one", "all", "filter", "map", "size", "contains"}


@dataclass(frozen=True)
class Explanation:
    """What a code is, as ordered label/value rows under a title."""

    code: str
    kind: str  # "rule", "xid", "sxid", "finding"
    title: str
    rows: list[tuple[str, str]] = field(default_factory=list)


def normalise(code: str) -> str:
    """`Xid 79`, `xid79`, `79` → `xid.79`; `SXid 12028` → `sxid.12028`; others lower-cased."""
    text = code.strip().lower()
    match = _XID.match(text)
    if match is not None:
        return f"{match.group('kind') or 'xid'}.{int(match.group('number'))}"
    return text


def explain(code: str, ruleset: RuleSet) -> Explanation:
    """The explanation of `code`; ConfigError (with close matches) when nothing is named so."""
    wanted = normalise(code)
    rule = ruleset.by_id(wanted) or ruleset.by_id(code.strip())
    if rule is not None:
        return _rule(rule, ruleset)
    kind, _, number = wanted.partition(".")
    if kind in ("xid", "sxid") and number.isdigit():
        return _xid(kind, int(number), ruleset)
    if wanted in codes.CODES:
        return _finding(wanted, ruleset)
    known = [r.id for r in ruleset.rules] + list(codes.CODES)
    close = difflib.get_close_matches(wanted, known, n=4, cutoff=0.6)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ConfigError(
        f"no rule, Xid or finding code named {code!r} (rule ids: sitscheck rules list; "
        f"Xids: xid.N / sxid.N; finding codes: <check>.<name>){hint}"
    )


def render(explanation: Explanation) -> str:
    lines = [explanation.title]
    for label, value in explanation.rows:
        lines.extend(_wrapped(label, value))
    return "\n".join(lines) + "\n"


def explain_text(code: str, ruleset: RuleSet) -> str:
    return render(explain(code, ruleset))


# --------------------------------------------------------------------------- rules


def _rule(rule: Rule, ruleset: RuleSet) -> Explanation:
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
    ]
    checks, reads = _reads(rule)
    evidence = [
        f"{c}: {codes.CHECK_EVIDENCE[c]}" if c in codes.CHECK_EVIDENCE else c for c in checks
    ]
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


# --------------------------------------------------------------------------- Xids


def _xid(kind: str, number: int, ruleset: RuleSet) -> Explanation:
    from .checks.xid.catalog import lookup_sxid, lookup_xid
    from .checks.xid.judge import ACTION_TEXT

    info = lookup_sxid(number) if kind == "sxid" else lookup_xid(number)
    label = "SXid" if kind == "sxid" else "Xid"
    code = f"{kind}.{number}"
    rows = [
        ("meaning", info.meaning + ("" if info.known else " (check NVIDIA's Xid catalog)")),
        ("name", info.name),
        ("layer", "driver (raised by the xid check)"),
        (
            "severity",
            info.severity
            + (
                " (message-dependent for Xid 154 and 144-150)"
                if kind == "xid" and (number == 154 or 144 <= number <= 150)
                else ""
            ),
        ),
        (
            "source",
            "NVIDIA Xid catalog"
            if kind == "xid"
            else "NVIDIA Fabric Manager user guide, NVSwitch SXid tables",
        ),
        (
            "evidence",
            codes.CHECK_EVIDENCE["xid"]
            + ("; an NVSwitch SXid line names the switch, not a GPU" if kind == "sxid" else ""),
        ),
    ]
    if info.sympathetic:
        rows.append(("note", "often logged as a consequence of another error: correlate first"))
    causes = _explained_by(code, ruleset)
    if causes:
        rows.append(("explained by", ", ".join(causes)))
    action = ACTION_TEXT.get(info.action, info.action)
    if info.followup is not None:
        action += "; then, if it persists: " + ACTION_TEXT.get(info.followup, info.followup)
    rows.append(("action", action))
    return Explanation(code, kind, f"{code}: {label} {number} ({info.name})", rows)


# --------------------------------------------------------------------------- findings


def _finding(code: str, ruleset: RuleSet) -> Explanation:
    check = codes.check_of(code)
    rows = [
        ("meaning", codes.CODES[code]),
        ("layer", f"{codes.CHECK_LAYER.get(check, '?')} (raised by the {check} check)"),
        ("severity", codes.SEVERITY.get(code, "?")),
        ("source", f"the {check} check (no threshold: decided from the evidence alone)"),
        ("evidence", codes.CHECK_EVIDENCE.get(check, "?")),
    ]
    causes = _explained_by(code, ruleset)
    if causes:
        rows.append(("explained by", ", ".join(causes)))
    rows.append(("action", codes.ACTION.get(code, "-")))
    return Explanation(code, "finding", f"{code}: finding of the {check} check", rows)


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
