"""CEL (Common Expression Language) for rule conditions: compiled once, never `eval`.

celpy's interpreted runner walks the parsed tree; expression length is capped so a
pathological condition is refused at load rather than evaluated.
"""

from __future__ import annotations

import re
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

        self._env = celpy.Environment()
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
            program = self._env.program(ast)
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

    def is_error(self, value: Any) -> bool:
        return isinstance(value, self._eval_error)

    @property
    def eval_errors(self) -> tuple[type[BaseException], ...]:
        return (self._eval_error,)


def render_message(template: str, values: list[str]) -> str:
    it = iter(values)
    return _PLACEHOLDER.sub(lambda _m: next(it, "?"), template)


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or ["syntax error"])[0]
