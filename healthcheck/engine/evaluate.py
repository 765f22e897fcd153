"""Evaluate rules over the checks' results: verdicts per node or per GPU.

The engine never touches the host: its inputs are the check results, the profile and the
params. A rule whose required check was skipped is SKIPPED; one whose check could not run, or
whose expression reads a value that is missing, is UNKNOWN with the reason. Nulls in facts are
dropped before evaluation, so a rule tests presence with `has()` and reading an absent value
is an error. Missing data never reads as healthy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..models import CheckResult, Device, Status, Verdict
from .cel import CelEnvironment, render_message
from .identity import gpu_identity, gpu_records
from .model import CompiledExpr, Profile, Rule, RuleSet

PROFILE_REQUIREMENT = "profile"


@dataclass(frozen=True)
class Scope:
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
) -> list[Verdict]:
    params = {**ruleset.params, **(profile.params if profile else {}), **ruleset.site_params}
    # The node's activation is converted to CEL values once; each GPU's scope shares it and
    # adds only `gpu` (converting the whole node again per GPU cost ~20 ms and ~1 MB a GPU).
    node_activation = env.to_cel(
        without_nulls(build_activation(results, profile, params, node or {}))
    )
    node_scope = Scope(node_activation, None)
    gpu_scopes = [
        Scope(env.with_name(node_activation, "gpu", without_nulls(gpu)), _device(gpu))
        for gpu in gpu_views(results)
    ]
    by_name = {r.name: r for r in results}
    verdicts: list[Verdict] = []
    for rule in ruleset.rules:
        blocked = _blocked(rule, by_name, profile)
        if blocked is not None:
            verdicts.append(_verdict(rule, blocked[0], None, reason=blocked[1]))
            continue
        scopes = [node_scope] if rule.scope == "node" else gpu_scopes
        verdicts.extend(_evaluate(rule, scopes, env))
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
    """Drop nulls, so a rule tests presence with CEL's `has()` and reading one is an error;
    integers beyond CEL's int64 become doubles."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value if v is not None]
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and not _INT64_MIN <= value <= _INT64_MAX
    ):
        return float(value)  # a u64 counter (e.g. a sysfs total of 2**64-1): CEL ints are int64
    return value


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def gpu_views(results: list[CheckResult]) -> list[dict[str, Any]]:
    """One record per GPU: each check's per-GPU entry for it, under the check name, joined by
    the GPU's identity (PCI bus id, else UUID: `identity.gpu_identity`), never by list index.
    A record that names its GPU only by UUID or index joins the GPU that a bus-id record gave
    that UUID or index, when exactly one did. A second record of one check with an identity
    already seen is left out (the runner made that check UNKNOWN, naming both)."""
    views: dict[str, dict[str, Any]] = {}
    weak: list[tuple[str, dict[str, Any]]] = []
    for result in results:
        mine: set[str] = set()
        for entry in gpu_records(result.facts):
            identity = gpu_identity(entry)
            if identity is None or identity in mine:
                continue
            mine.add(identity)
            if identity.startswith("pci:"):
                _join(views.setdefault(identity, {}), result.name, entry)
            else:
                weak.append((result.name, entry))
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


def _evaluate(rule: Rule, scopes: list[Scope], env: CelEnvironment) -> list[Verdict]:
    out: list[Verdict] = []
    for scope in scopes:
        try:
            if rule.guard is not None and not _truth(rule.guard, scope, env):
                continue
            fired = _truth(rule.when, scope, env)
        except _Missing as exc:
            out.append(_verdict(rule, Status.UNKNOWN, scope.device, reason=str(exc)))
            continue
        if fired:
            message = render_message(
                rule.message, [_text(p, scope, env) for p in rule.placeholders]
            )
            out.append(_verdict(rule, rule.severity.as_status(), scope.device, message=message))
    if not out:
        out.append(_verdict(rule, Status.OK, None))
    return out


def _truth(expr: CompiledExpr, scope: Scope, env: CelEnvironment) -> bool:
    value = _value(expr, scope, env)
    if not isinstance(value, bool):
        raise _Missing(f"{expr.text!r} gave {value!r}, not true/false")
    return value


def _value(expr: CompiledExpr, scope: Scope, env: CelEnvironment) -> Any:
    try:
        value = expr.program.evaluate(scope.activation)
    except env.eval_errors as exc:
        raise _Missing(f"cannot evaluate {expr.text!r}: {_reason(exc)}") from exc
    except (TypeError, ValueError, KeyError, ZeroDivisionError, RecursionError) as exc:
        raise _Missing(f"cannot evaluate {expr.text!r}: {exc}") from exc
    if env.is_error(value):
        raise _Missing(f"cannot evaluate {expr.text!r}: {_reason(value)}")
    return _plain(value)


def _text(expr: CompiledExpr, scope: Scope, env: CelEnvironment) -> str:
    try:
        value = _value(expr, scope, env)
    except _Missing:
        return "?"
    if isinstance(value, float):
        return f"{value:.1f}".rstrip("0").rstrip(".") if abs(value) < 1e6 else f"{value:.3g}"
    return str(value)


def _plain(value: Any) -> Any:
    from celpy import celtypes

    if isinstance(value, celtypes.BoolType):
        return bool(value)
    if isinstance(value, celtypes.IntType | celtypes.UintType):
        return int(value)
    if isinstance(value, celtypes.DoubleType):
        return float(value)
    if isinstance(value, celtypes.StringType):
        return str(value)
    return value


def _reason(exc: Any) -> str:
    args = getattr(exc, "args", ())
    return str(args[0]) if args else str(exc)


def _verdict(
    rule: Rule,
    status: Status,
    device: Device | None,
    message: str | None = None,
    reason: str | None = None,
) -> Verdict:
    return Verdict(
        rule=rule.id,
        status=status,
        message=message or (rule.description or rule.id).strip().splitlines()[0],
        layer=rule.layer,
        device=device,
        action=rule.action if status in (Status.WARNING, Status.CRITICAL) else None,
        action_category=(
            rule.action_category if status in (Status.WARNING, Status.CRITICAL) else None
        ),
        source=rule.source,
        explains=list(rule.explains),
        reason=reason,
    )
