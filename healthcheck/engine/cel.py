"""CEL (Common Expression Language) for rule conditions: compiled once, never `eval`.

Two engines behind the same rule files, with the same answers (`tests/rules/
test_engine_differential.py`): Google's runtime (`cel_google`, cel-expr-python) where its
wheel exists, else celpy (`cel_celpy`, cel-python). Both are bounded the same way: an
expression longer than MAX_EXPR_CHARS or with more than MAX_COMPREHENSIONS comprehensions in
its syntax tree (a comment between `.` and `all(` hides nothing there) is refused at load,
and every evaluation runs under `budget`'s step budget and the run's deadline.
"""

from __future__ import annotations

import re
from importlib.util import find_spec
from typing import Any, Protocol

from ..errors import RuleError
from .errors import CompileFailure, first_line
from .model import CompiledExpr, Shape
from .syntax import parse, shape_of

MAX_EXPR_CHARS = 2000
# Two comprehensions per expression keep every rule cheap (the shipped ones use at most two,
# one in a `when`, one more in a message); the step budget bounds the rest.
MAX_COMPREHENSIONS = 2
_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
GOOGLE, CELPY = "cel-expr-python", "celpy"


class Engine(Protocol):
    name: str

    def compile(self, text: str) -> Any: ...

    def activation(self, values: dict[str, Any]) -> Any: ...

    def evaluate(self, program: Any, activation: Any, deadline: float | None) -> Any: ...


def default_engine() -> str:
    return GOOGLE if find_spec("cel_expr_python") is not None else CELPY


class CelEnvironment:
    """One engine per rule set: compiles expressions, builds scopes, evaluates. Nothing is
    kept between runs: every run compiles the rules it reads."""

    def __init__(self, engine: str | None = None) -> None:
        chosen = engine or default_engine()
        if chosen == GOOGLE:
            from .cel_google import GoogleEngine

            self._engine: Engine = GoogleEngine()
        elif chosen == CELPY:
            from .cel_celpy import CelpyEngine

            self._engine = CelpyEngine()
        else:
            raise ValueError(f"unknown CEL engine {chosen!r} (one of {GOOGLE}, {CELPY})")
        # what each text compiled to: the shipped rules repeat a quarter of their expressions
        # (guards, message placeholders), and a program is only read by its evaluations
        self._compiled: dict[str, tuple[Any, Shape]] = {}

    @property
    def engine(self) -> str:
        return self._engine.name

    def compile(self, text: str, file: str, line: int) -> CompiledExpr:
        if len(text) > MAX_EXPR_CHARS:
            raise RuleError(file, f"expression longer than {MAX_EXPR_CHARS} characters", line)
        try:
            compiled = self._compiled.get(text)
            if compiled is None:  # the engine's words for a mistake, then the syntax's bounds
                program = self._engine.compile(text)
                compiled = self._compiled[text] = (program, shape_of(parse(text)))
        except CompileFailure as exc:
            # an error at the end of the text is on its last line with any text on it
            offset = max(min(exc.line_offset, len(text.rstrip().splitlines()) - 1), 0)
            raise RuleError(file, f"bad CEL expression {text!r}: {exc}", line + offset) from exc
        program, shape = compiled
        if shape.comprehensions > MAX_COMPREHENSIONS:
            raise RuleError(
                file,
                f"{shape.comprehensions} comprehensions in one expression (at most "
                f"{MAX_COMPREHENSIONS}): {first_line(text, '')[:80]!r}",
                line,
            )
        return CompiledExpr(text, program, shape)

    def placeholders(self, message: str, file: str, line: int) -> tuple[CompiledExpr, ...]:
        return tuple(self.compile(m.strip(), file, line) for m in _PLACEHOLDER.findall(message))

    def activation(self, values: dict[str, Any]) -> Any:
        """A scope: plain values (no nulls), converted as the engine does."""
        return self._engine.activation(values)

    def evaluate(self, expr: CompiledExpr, activation: Any, deadline: float | None) -> Any:
        """The expression's plain value (bool, int, float, str, list, dict). Raises
        `errors.EvalFailure` (a CEL error) or `budget.BudgetExceeded`."""
        return self._engine.evaluate(expr.program, activation, deadline)


def render_message(template: str, values: list[str]) -> str:
    it = iter(values)
    return _PLACEHOLDER.sub(lambda _m: next(it, "?"), template)
