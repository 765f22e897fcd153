"""Rules and profiles as loaded: validated, with every CEL expression compiled."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import Struct, field

from ..models import ActionCategoryName, Layer, Severity

Scope = Literal["node", "gpu"]


Path = tuple[str, ...]  # a chain of field selections from a name: ("checks", "xid", "facts")


class Shape(Struct, frozen=True):
    """What an expression's syntax tree does: its comprehensions and the paths it reads
    (None where the engine does not say: anything may be read)."""

    comprehensions: int = 0
    reads: frozenset[Path] | None = None


class CompiledExpr(Struct, frozen=True):
    """One CEL expression of a rule file: its text, compiled program and syntax `Shape`."""

    text: str
    program: Any  # the engine's compiled program; None: not compiled before the deadline
    shape: Shape = field(default_factory=Shape)


class Rule(Struct, frozen=True):
    """One rule as loaded: `when`, `guard` and message placeholders compiled, and where it is."""

    id: str
    scope: Scope
    when: CompiledExpr
    severity: Severity
    message: str
    placeholders: tuple[CompiledExpr, ...]
    file: str
    line: int
    requires: tuple[str, ...] = ()
    action: str | None = None
    action_category: ActionCategoryName | None = None
    source: str | None = None
    layer: Layer = Layer.RUNTIME
    explains: tuple[str, ...] = ()
    description: str | None = None
    guard: CompiledExpr | None = None


class RuleSet(Struct, frozen=True):
    """Every rule loaded for a run and the params (shipped and site)."""

    rules: tuple[Rule, ...]
    params: dict[str, Any] = field(default_factory=dict)
    site_params: dict[str, Any] = field(default_factory=dict)

    def by_id(self, rule_id: str) -> Rule | None:
        return next((r for r in self.rules if r.id == rule_id), None)


class Profile(Struct, frozen=True):
    """A node profile (what the node should be) as loaded: its data and params, and its file."""

    name: str
    file: str
    data: dict[str, Any]
    params: dict[str, Any] = field(default_factory=dict)
