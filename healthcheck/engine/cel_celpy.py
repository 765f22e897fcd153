"""The celpy (cel-python) engine: CEL interpreted in Python over lark parse trees.

The fallback where Google's runtime has no wheel (Python 3.10) and the reference the other
engine is tested against. Its interpreted runner is celpy's own with two changes:
`&&`/`||` stop where the left operand decides (`_short_circuit_runner`), and every
comprehension step is metered (`budget.Meter`: the step budget and the run's deadline).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from .budget import Meter
from .errors import CompileFailure, EvalFailure, first_line


class CelpyEngine:
    name = "celpy"

    def __init__(self) -> None:
        import celpy
        from celpy.adapter import json_to_cel
        from celpy.celparser import CELParseError
        from celpy.evaluation import CELEvalError

        self._env = celpy.Environment(runner_class=_short_circuit_runner())
        self._parse_error = CELParseError
        self._eval_error = CELEvalError
        self._json_to_cel = json_to_cel

    def compile(self, text: str) -> Any:
        """The program; CompileFailure with the line."""
        try:
            return self._env.program(self._env.compile(text))
        except self._parse_error as exc:
            raise CompileFailure(first_line(str(exc)), (exc.line or 1) - 1) from exc

    def activation(self, values: dict[str, Any]) -> Any:
        """Plain values as CEL ones."""
        return self._json_to_cel(values)

    def evaluate(self, program: Any, activation: Any, deadline: float | None) -> Any:
        """The plain value; EvalFailure for a CEL error; BudgetExceeded when it runs out."""
        try:
            if hasattr(program, "metered"):
                value = program.metered(activation, Meter(deadline))
            else:
                value = program.evaluate(activation)
        except self._eval_error as exc:
            raise EvalFailure(_reason(exc)) from exc
        except (TypeError, ValueError, KeyError, ZeroDivisionError, RecursionError) as exc:
            raise EvalFailure(str(exc)) from exc
        if isinstance(value, self._eval_error):
            raise EvalFailure(_reason(value))
        return plain(value)


def plain(value: Any) -> Any:
    """celpy's values as plain Python ones (what Google's runtime gives too)."""
    from celpy.celtypes import BoolType

    if isinstance(value, BoolType):  # an int to Python
        return bool(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    base = next((t for t in (int, float, str, bytes) if isinstance(value, t)), None)
    return value if base is None else base(value)


@cache
def _short_circuit_runner() -> type[Any] | None:
    """celpy's interpreted runner with `&&` and `||` that skip the right operand when the left
    one decides: `false && x` is false and `true || x` is true for every x, errors included
    (CEL's rule, which celpy applies only after evaluating both). A rule's guard such as
    `t.index == gpu.index && ...` inside `.exists()` over every GPU or pair then costs one
    comparison where it fails. Each macro step (a sub-evaluation of a comprehension's body)
    is counted on the evaluation's Meter, which raises BudgetExceeded through celpy.
    Values and error messages are celpy's own; None (celpy's runner, unmetered: the text's
    comprehension limit still holds) for a celpy laid out otherwise."""
    from celpy import InterpretedRunner
    from celpy.celtypes import BoolType, MapType, StringType
    from celpy.evaluation import CELEvalError, Evaluator
    from lark import Token, Tree

    overridden = "conditionaland conditionalor sub_evaluator visit evaluate macro_has_eval"
    needed = [getattr(Evaluator, name, None) for name in overridden.split()]
    needed.append(getattr(InterpretedRunner, "new_activation", None))
    if not all(callable(method) for method in needed):
        return None

    class ShortCircuit(Evaluator):
        meter: Meter | None = None
        step = False  # the body of a comprehension: each evaluation is one step

        def sub_evaluator(self, ast: Tree[Any]) -> Evaluator:
            nested = ShortCircuit(ast, activation=self.activation)
            nested.meter, nested.step = self.meter, True
            return nested

        def evaluate(self, context: Any = None) -> Any:
            if self.step and self.meter is not None:
                self.meter.step()
            return super().evaluate(context)

        def conditionaland(self, tree: Tree[Any]) -> Any:
            return self._logical(tree, "_&&_", False, super().conditionaland)

        def conditionalor(self, tree: Tree[Any]) -> Any:
            return self._logical(tree, "_||_", True, super().conditionalor)

        def _logical(self, tree: Tree[Any], operator: str, decided_by: bool, other: Any) -> Any:
            if len(tree.children) != 2:  # not `a && b`: celpy's own
                return other(tree)
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

        def macro_has_eval(self, exprlist: Tree[Any]) -> Any:
            """`has(e.f)` as CEL has it (and Google's runtime): an error in `e` is that
            error, not false (celpy reads any error as "not there"); f in a map is its key."""
            selection = _single_descendant(exprlist, "member_dot")
            if selection is None or not isinstance(selection.children[1], Token):
                return super().macro_has_eval(exprlist)
            target = self._operand(selection.children[0])
            if isinstance(target, CELEvalError):
                return target
            if isinstance(target, MapType):
                return BoolType(StringType(selection.children[1].value) in target)
            return CELEvalError(
                f"has() of field {selection.children[1].value!r} of a "
                f"{type(target).__name__}, not a map",
                TypeError,
                (),
                tree=exprlist,
            )

        def _operand(self, child: Any) -> Any:
            """The operand's value; an error raised inside it (a macro's body) as the error
            value, which the other operand may still decide (CEL: `error && false` is
            false), as Google's runtime has it."""
            try:
                return self.visit(child) if isinstance(child, Tree) else child
            except CELEvalError as exc:
                return exc

    class Runner(InterpretedRunner):
        def evaluate(self, context: Any) -> Any:
            return self.metered(context, None)

        def metered(self, context: Any, meter: Meter | None) -> Any:
            evaluator = ShortCircuit(ast=self.ast, activation=self.new_activation())
            evaluator.meter = meter
            return evaluator.evaluate(context)

    return Runner


def _single_descendant(tree: Any, data: str) -> Any:
    """The `data` node reached from `tree` through nodes of one child each, or None."""
    from lark import Tree

    node = tree
    while isinstance(node, Tree):
        if node.data == data:
            return node
        if len(node.children) != 1:
            return None
        node = node.children[0]
    return None


def _reason(exc: Any) -> str:
    args = getattr(exc, "args", ())
    return str(args[0]) if args else str(exc)
