"""Evaluate rules over the checks' results: verdicts per node or per GPU.

The engine never touches the host: its inputs are the check results, the profile and the
params. A rule whose required check was skipped is SKIPPED; one whose check could not run, or
whose expression reads a value that is missing, is UNKNOWN with the reason. Nulls in facts are
dropped before evaluation, so a rule tests presence with `has()` and reading an absent value
is an error. Missing data never reads as healthy.

A scope holds only the parts of the values its rules read: each compiled expression says
which paths it reads (chains of field selections from a name, `checks.topology.facts.nics`;
a name used any other way is read whole: `model.Shape.reads`). So the node's scope holds not
every check's facts (a 256-GPU topology's 65,280 matrix cells, read by no rule), and a GPU's
scope not the node's values again (converted again for each GPU, a whole check's facts made
64 GPUs 13 s). Nothing a rule reads is left out: every verdict is as it is without the cut.

Every evaluation is bounded (`budget`: a step budget, and the run's deadline inside celpy's
evaluation and between every two evaluations): a rule that runs out is UNKNOWN and named,
and a rule not reached by the deadline is UNKNOWN "not evaluated", so the report is written.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from msgspec import Struct

from ..contract.identity import gpu_identity, gpu_records
from ..models import CheckResult, Device, Status, Verdict
from .budget import BudgetExceeded, passed
from .cel import CelEnvironment, render_message
from .errors import EvalFailure
from .model import CompiledExpr, Path, Profile, Rule, RuleSet

PROFILE_REQUIREMENT = "profile"
NOT_EVALUATED = "not evaluated: the run's deadline passed before this rule"
NOT_COMPILED = "not compiled: the run's deadline passed while the rules were loaded"


class Scope(Struct, frozen=True):
    """What one set of verdicts is judged on: the CEL activation, and the GPU (None: the node)."""

    activation: Any  # CEL values
    device: Device | None


class _Missing(Exception):
    pass


def evaluate_rules(
    ruleset: RuleSet,
    results: list[CheckResult],
    profile: Profile | None,
    env: CelEnvironment,
    node: dict[str, Any] | None = None,
    deadline: float | None = None,
) -> list[Verdict]:
    """Every rule's verdicts; `deadline` (time.monotonic()) bounds the evaluation."""
    params = {**ruleset.params, **(profile.params if profile else {}), **ruleset.site_params}
    # Nulls are dropped once, before the GPU records are made of the facts (a topology pair
    # in the node's list and in both its GPUs' is one object); each scope is converted once.
    values = without_nulls(build_activation(results, profile, params, node or {}))
    node_scope = Scope(env.activation(prune(values, reads_of(ruleset.rules, "node"))), None)
    gpu_reads = reads_of(ruleset.rules, "gpu")
    for_gpus, gpu_only = prune(values, gpu_reads), below(gpu_reads, "gpu")
    gpu_scopes = [
        Scope(env.activation({**for_gpus, "gpu": prune(gpu, gpu_only)}), _device(gpu))
        for gpu in gpu_views(values["checks"])
    ]
    by_name = {r.name: r for r in results}
    verdicts: list[Verdict] = []
    for rule in ruleset.rules:
        blocked = _blocked(rule, by_name, profile)
        if blocked is not None:
            verdicts.append(_verdict(rule, blocked[0], None, reason=blocked[1]))
        elif rule.when.program is None:
            verdicts.append(_verdict(rule, Status.UNKNOWN, None, reason=NOT_COMPILED))
        elif passed(deadline):
            verdicts.append(_verdict(rule, Status.UNKNOWN, None, reason=NOT_EVALUATED))
        else:
            scopes = [node_scope] if rule.scope == "node" else gpu_scopes
            verdicts.extend(_evaluate(rule, scopes, env, deadline))
    return verdicts


def build_activation(
    results: list[CheckResult],
    profile: Profile | None,
    params: dict[str, Any],
    node: dict[str, Any],
) -> dict[str, Any]:
    checks = {
        r.name: {
            "status": r.status.value,
            "facts": r.facts,
            "metrics": {m.name: m.value for m in r.metrics if not m.labels},
            "findings": [f.code for f in r.findings],
        }
        for r in results
    }
    findings = [
        {
            "code": f.code,
            "check": r.name,
            "severity": f.severity.value,
            "gpu": f.device.index if f.device and f.device.index is not None else -1,
            "pci_bus_id": (f.device.pci_bus_id if f.device else None) or "",
        }
        for r in results
        for f in r.findings
    ]
    return {
        "checks": checks,
        "findings": findings,
        "profile": profile.data if profile else {},
        "params": params,
        "node": node,
    }


def without_nulls(value: Any) -> Any:
    """Plain JSON values for CEL: nulls dropped, so a rule tests presence with CEL's `has()`
    and reading one is an error; integers beyond CEL's int64 become doubles; subclasses of
    dict, list, str (a YAML mapping with its lines, an enum) their plain base; a string that
    is not valid Unicode (a lone surrogate from an undecodable byte) escaped."""
    kind = type(value)
    if kind is float or kind is bool or (kind is str and value.isascii()):
        return value  # most values of a node: as they are
    if kind is int:
        return value if -(2**63) <= value < 2**63 else float(value)
    if isinstance(value, dict):
        return {_unicode(k): without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [without_nulls(v) for v in value if v is not None]
    if isinstance(value, int | float):  # an IntEnum (bool cannot be subclassed)
        return without_nulls(int(value) if isinstance(value, int) else float(value))
    return _unicode(value)


def _unicode(value: Any) -> Any:
    """A string as plain valid Unicode (a lone surrogate escaped); anything else as it is."""
    if not isinstance(value, str) or (type(value) is str and value.isascii()):
        return value
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")


def reads_of(rules: Iterable[Rule], scope: str) -> frozenset[Path] | None:
    """Every path the expressions of the rules of `scope` can read; None when one of them
    does not say (an expression left uncompiled)."""
    exprs = [e for r in rules if r.scope == scope for e in (r.when, r.guard, *r.placeholders) if e]
    if any(expr.shape.reads is None for expr in exprs):
        return None
    return frozenset(path for expr in exprs for path in expr.shape.reads or ())


def below(reads: frozenset[Path] | None, name: str) -> frozenset[Path] | None:
    """The paths read below `name` (`gpu.nvlink.x` -> `nvlink.x`); None: anything."""
    if reads is None or (name,) in reads:
        return None
    return frozenset(path[1:] for path in reads if len(path) > 1 and path[0] == name)


def prune(values: dict[str, Any], reads: frozenset[Path] | None) -> dict[str, Any]:
    """`values` with only what `reads` can reach (all of it for None): a read that ends at a
    value keeps the whole of that value; one that goes through a list keeps the list."""
    if reads is None:
        return values
    out: dict[str, Any] = {}
    for path in reads:
        source, target = values, out
        for depth, key in enumerate(path):
            if key not in source:
                break
            value = source[key]
            if depth == len(path) - 1 or not isinstance(value, dict):
                target[key] = value  # the whole value (a read of part of it may come later)
                break
            if target.get(key) is value:
                break  # kept whole already
            source, target = value, target.setdefault(key, {})
    return out


def gpu_views(checks: dict[str, Any]) -> list[dict[str, Any]]:
    """One record per GPU (`checks`: the activation's, `build_activation`): each check's
    per-GPU entry for it, under the check name, joined by the GPU's identity (PCI bus id,
    else UUID: `identity.gpu_identity`), never by list index. A record that names its GPU
    only by UUID or index joins the GPU that a bus-id record gave that UUID or index, when
    exactly one did. A second record of one check with an identity already seen is left
    out (the runner made that check UNKNOWN, naming both).

    Where the check's facts have `pairs` (records naming two GPUs as `a_index` and `b_index`,
    as topology's), each of its GPU records gets the pairs that name that GPU as `pairs`, in
    their order: a rule reads `gpu.topology.pairs` instead of searching every pair for every
    GPU (the node's n*(n-1)/2 pairs for each of n GPUs: 8.4 million steps a rule on 256).
    """
    views: dict[str, dict[str, Any]] = {}
    weak: list[tuple[str, dict[str, Any]]] = []
    for check, values in checks.items():
        mine: set[str] = set()
        facts = values.get("facts") or {}
        pairs = _pairs_by_gpu(facts.get("pairs"))
        for entry in gpu_records(facts):
            identity = gpu_identity(entry)
            if identity is None or identity in mine:
                continue
            mine.add(identity)
            entry = _with_pairs(entry, pairs)
            if identity.startswith("pci:"):
                _join(views.setdefault(identity, {}), check, entry)
            else:
                weak.append((check, entry))
    for name, entry in weak:
        identity = gpu_identity(entry) or ""
        matches = [v for v in views.values() if _alias(v, identity)]
        view = matches[0] if len(matches) == 1 else views.setdefault(identity, {})
        if name not in view:
            _join(view, name, entry)
    return sorted(views.values(), key=_order)


def _join(view: dict[str, Any], name: str, entry: dict[str, Any]) -> None:
    view[name] = entry
    for key in ("index", "pci_bus_id", "name", "uuid"):
        if entry.get(key) is not None and key not in view:
            view[key] = entry[key]


def _alias(view: dict[str, Any], identity: str) -> bool:
    kind, _, value = identity.partition(":")
    if kind == "uuid":
        return str(view.get("uuid") or "") == value
    return kind == "index" and str(view.get("index")) == value


def _order(view: dict[str, Any]) -> tuple[int, str]:
    index = view.get("index")
    return (index if isinstance(index, int) else 1 << 30, str(view.get("pci_bus_id") or ""))


def _with_pairs(entry: dict[str, Any], pairs: dict[int, list[Any]] | None) -> dict[str, Any]:
    index = entry.get("index")
    if pairs is None or "pairs" in entry or not isinstance(index, int):
        return entry
    return {**entry, "pairs": pairs.get(index, [])}


def _pairs_by_gpu(pairs: Any) -> dict[int, list[Any]] | None:
    if not isinstance(pairs, list):
        return None
    # pairs of other records (bandwidth's) name no two GPUs: no join
    named = [p for p in pairs if isinstance(p, dict) and {"a_index", "b_index"} <= set(p)]
    out: dict[int, list[Any]] = {}
    for pair in named:
        for index in {pair["a_index"], pair["b_index"]}:
            if isinstance(index, int) and not isinstance(index, bool):
                out.setdefault(index, []).append(pair)
    return out if named else None


def _device(gpu: dict[str, Any]) -> Device:
    return Device(index=gpu.get("index"), pci_bus_id=gpu.get("pci_bus_id"), name=gpu.get("name"))


def _blocked(
    rule: Rule, by_name: dict[str, CheckResult], profile: Profile | None
) -> tuple[Status, str] | None:
    for name in rule.requires:
        if name == PROFILE_REQUIREMENT:
            if profile is None:
                return Status.SKIPPED, "no hardware profile selected"
            continue
        result = by_name.get(name)
        if result is None or result.status == Status.SKIPPED:
            why = result.skip_reason if result and result.skip_reason else "not run"
            return Status.SKIPPED, f"check {name} skipped: {why}"
        if result.error is not None:
            return Status.UNKNOWN, f"check {name} could not run: {result.error}"
    return None


def _evaluate(
    rule: Rule, scopes: list[Scope], env: CelEnvironment, deadline: float | None
) -> list[Verdict]:
    out: list[Verdict] = []
    for scope in scopes:
        if passed(deadline):
            out.append(_verdict(rule, Status.UNKNOWN, scope.device, reason=NOT_EVALUATED))
            break
        try:
            if rule.guard is not None and not _truth(rule.guard, scope, env, deadline):
                continue
            fired = _truth(rule.when, scope, env, deadline)
        except _Missing as exc:
            out.append(_verdict(rule, Status.UNKNOWN, scope.device, reason=str(exc)))
            continue
        if fired:
            message = render_message(
                rule.message, [_text(p, scope, env, deadline) for p in rule.placeholders]
            )
            out.append(_verdict(rule, rule.severity.as_status(), scope.device, message=message))
    if not out:
        out.append(_verdict(rule, Status.OK, None))
    return out


def _truth(expr: CompiledExpr, scope: Scope, env: CelEnvironment, deadline: float | None) -> bool:
    value = _value(expr, scope, env, deadline)
    if not isinstance(value, bool):
        raise _Missing(f"{expr.text!r} gave {value!r}, not true/false")
    return value


def _value(expr: CompiledExpr, scope: Scope, env: CelEnvironment, deadline: float | None) -> Any:
    try:
        return env.evaluate(expr, scope.activation, deadline)
    except EvalFailure as exc:
        raise _Missing(f"cannot evaluate {expr.text!r}: {exc}") from exc
    except BudgetExceeded as exc:
        raise _Missing(f"{expr.text!r} {exc}") from exc


def _text(expr: CompiledExpr, scope: Scope, env: CelEnvironment, deadline: float | None) -> str:
    try:
        return _shown(_value(expr, scope, env, deadline))
    except _Missing:
        return "?"


def _shown(value: Any) -> str:
    """A placeholder's value as a message shows it: a float to one decimal, a list as its
    items (each shown so) separated by commas."""
    if isinstance(value, float):
        return f"{value:.1f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.3g}"
    if isinstance(value, list):
        return ", ".join(_shown(item) for item in value)
    return str(value)


def _verdict(
    rule: Rule,
    status: Status,
    device: Device | None,
    message: str | None = None,
    reason: str | None = None,
) -> Verdict:
    alarm = status in (Status.WARNING, Status.CRITICAL)
    return Verdict(
        rule=rule.id,
        status=status,
        message=message or (rule.description or rule.id).strip().splitlines()[0],
        layer=rule.layer,
        device=device,
        action=rule.action if alarm else None,
        action_category=rule.action_category if alarm else None,
        source=rule.source,
        explains=list(rule.explains),
        reason=reason,
    )
