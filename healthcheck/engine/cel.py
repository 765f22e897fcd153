"""CEL (Common Expression Language) for rule conditions: compiled once, never `eval`.

celpy's interpreted runner walks the parsed tree (with `&&`/`||` that stop where the left
operand decides, see `_short_circuit_runner`); expression length is capped so a pathological
condition is refused at load rather than evaluated. Compiled trees keep only the positions
celpy reads (`_shared_positions`).
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from ..errors import RuleError
from .model import CompiledExpr

MAX_EXPR_CHARS = 2000
# Comprehensions (`.all()`, `.exists()`, `.map()`, ...) multiply: k of them nested over lists of
# n items cost n**k steps. Two per expression keeps every rule bounded (the shipped ones use
# at most one); a pathological expression is refused at load instead of running for days.
MAX_COMPREHENSIONS = 2
_COMPREHENSION = re.compile(r"\.\s*(?:exists_one|exists|all|map|filter)\s*\(")
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")


class CelEnvironment:
    """One celpy environment per rule set (the parser is built once, lazily)."""

    def __init__(self) -> None:
        import celpy
        from celpy.adapter import json_to_cel
        from celpy.celparser import CELParseError
        from celpy.evaluation import CELEvalError

        self._env = celpy.Environment(runner_class=_short_circuit_runner())
        self._parse_error = CELParseError
        self._eval_error = CELEvalError
        self._json_to_cel = json_to_cel

    def compile(self, text: str, file: str, line: int) -> CompiledExpr:
        if len(text) > MAX_EXPR_CHARS:
            raise RuleError(file, f"expression longer than {MAX_EXPR_CHARS} characters", line)
        if len(_COMPREHENSION.findall(text)) > MAX_COMPREHENSIONS:
            raise RuleError(
                file, f"more than {MAX_COMPREHENSIONS} comprehensions in one expression", line
            )
        try:
            ast = self._env.compile(text)
            program = self._env.program(_shared_positions(ast))
        except self._parse_error as exc:
            offset = (exc.line or 1) - 1
            raise RuleError(
                file, f"bad CEL expression {text!r}: {_first_line(exc)}", line + offset
            ) from exc
        except Exception as exc:
            raise RuleError(file, f"bad CEL expression {text!r}: {exc}", line) from exc
        return CompiledExpr(text, program)

    def placeholders(self, message: str, file: str, line: int) -> tuple[CompiledExpr, ...]:
        return tuple(self.compile(m.strip(), file, line) for m in _PLACEHOLDER.findall(message))

    def to_cel(self, value: Any) -> Any:
        return self._json_to_cel(value)

    def with_name(self, activation: Any, name: str, value: Any) -> Any:
        """A converted activation (a CEL map) with one more top-level name: the same as
        `to_cel({**plain, name: value})`, sharing the values already converted."""
        extended = type(activation)(activation)
        extended[self._json_to_cel(name)] = self._json_to_cel(value)
        return extended

    def is_error(self, value: Any) -> bool:
        return isinstance(value, self._eval_error)

    @property
    def eval_errors(self) -> tuple[type[BaseException], ...]:
        return (self._eval_error,)


@cache
def _short_circuit_runner() -> type[Any] | None:
    """celpy's interpreted runner with `&&` and `||` that skip the right operand when the left
    one decides: `false && x` is false and `true || x` is true for every x, errors included
    (CEL's rule, which celpy applies only after evaluating both). A rule's guard such as
    `t.index == gpu.index && ...` inside `.exists()` over every GPU or pair then costs one
    comparison where it fails, which is most of the per-GPU evaluation time. Values and
    error messages are celpy's own; None (celpy's runner) for a celpy laid out otherwise."""
    from celpy import InterpretedRunner
    from celpy.celtypes import BoolType
    from celpy.evaluation import CELEvalError, Evaluator
    from lark import Tree

    if not all(
        callable(getattr(Evaluator, name, None))
        for name in ("conditionaland", "conditionalor", "sub_evaluator", "visit")
    ) or not callable(getattr(InterpretedRunner, "new_activation", None)):
        return None

    class ShortCircuit(Evaluator):
        def sub_evaluator(self, ast: Tree[Any]) -> Evaluator:
            return ShortCircuit(ast, activation=self.activation)

        def conditionaland(self, tree: Tree[Any]) -> Any:
            if len(tree.children) != 2:
                return super().conditionaland(tree)
            return self._logical(tree, "_&&_", decided_by=False)

        def conditionalor(self, tree: Tree[Any]) -> Any:
            if len(tree.children) != 2:
                return super().conditionalor(tree)
            return self._logical(tree, "_||_", decided_by=True)

        def _logical(self, tree: Tree[Any], operator: str, decided_by: bool) -> Any:
            left = self._operand(tree.children[0])
            if isinstance(left, BoolType) and bool(left) is decided_by:
                return left
            right = self._operand(tree.children[1])
            function = self.activation.resolve_function(operator)
            try:
                return function(left, right)
            except TypeError as exc:  # as celpy words it
                error = CELEvalError(
                    f"found no matching overload for {operator} "
                    f"applied to '({type(left)}, {type(right)})'",
                    exc.__class__,
                    exc.args,
                    tree=tree,
                )
                error.__cause__ = exc
                return error

        def _operand(self, child: Any) -> Any:
            return self.visit(child) if isinstance(child, Tree) else child

    class Runner(InterpretedRunner):
        def evaluate(self, context: Any) -> Any:
            return ShortCircuit(ast=self.ast, activation=self.new_activation()).evaluate(context)

    return Runner


def _shared_positions(ast: Any) -> Any:
    """The parse tree with one small lark `Meta` per source position, shared by the nodes that
    start there, in place of lark's own per node (13 attributes in a dict, ~500 bytes: two
    thirds of a compiled rule set's memory, ~6 MB of the shipped rules). celpy reads only
    `line` and `column` of it (the place an evaluation error names)."""
    from lark import Tree
    from lark.tree import Meta

    shared: dict[tuple[int, int], Meta] = {}
    pending = [ast]
    while pending:
        node = pending.pop()
        if not isinstance(node, Tree):
            continue
        pending.extend(node.children)
        meta = node._meta
        if meta is None or meta.empty:
            continue
        where = (meta.line, meta.column)
        compact = shared.get(where)
        if compact is None:
            compact = shared[where] = Meta()  # type: ignore[no-untyped-call]
            compact.empty, compact.line, compact.column = False, meta.line, meta.column
        node._meta = compact
    return ast


def render_message(template: str, values: list[str]) -> str:
    it = iter(values)
    return _PLACEHOLDER.sub(lambda _m: next(it, "?"), template)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or ["syntax error"])[0]
