"""What a CEL engine raises, the same for every engine."""

from __future__ import annotations


class CompileFailure(Exception):
    """An expression that does not compile: the engine's words and the line within it."""

    def __init__(self, message: str, line_offset: int = 0) -> None:
        super().__init__(message)
        self.line_offset = line_offset


def first_line(text: str, default: str = "syntax error") -> str:
    """An engine's message cut to its first line with text on it."""
    return (text.strip().splitlines() or [default])[0]


class EvalFailure(Exception):
    """A CEL error value or a failed evaluation (a missing key, no such overload, ...)."""
