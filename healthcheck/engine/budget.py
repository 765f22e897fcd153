"""How much work one CEL evaluation may do: a step budget and the run's deadline.

Comprehensions (`.all()`, `.exists()`, `.map()`, ...) multiply: k of them nested over lists
of n items cost n**k steps, and a comment can hide one from any reading of the text. So the
evaluation itself is bounded, whatever the expression: every comprehension step counts
against `MAX_ITERATIONS` per evaluation, and the run's deadline is looked at as it goes. An
evaluation that runs out is `BudgetExceeded`: its rule is UNKNOWN, named, and the rest of the
run goes on.

MAX_ITERATIONS is the budget Google's CEL runtime (cel-expr-python, cel-cpp's
`RuntimeOptions.comprehension_max_iterations`) applies to every evaluation and does not let a
caller change; the celpy engine is held to the same count, so the two engines agree on which
rule runs out.
"""

from __future__ import annotations

import time

MAX_ITERATIONS = 10_000
_CLOCK_EVERY = 64  # steps between two looks at the clock
EXHAUSTED = f"ran out of its evaluation budget ({MAX_ITERATIONS} comprehension steps)"
DEADLINE_PASSED = "the run's deadline passed during its evaluation"


class BudgetExceeded(Exception):
    """An evaluation ran out of steps or past the run's deadline (the reason in words)."""


class Meter:
    """The steps of one evaluation; `step()` raises BudgetExceeded when they run out."""

    __slots__ = ("_deadline", "_left", "_until_clock")

    def __init__(self, deadline: float | None, budget: int = MAX_ITERATIONS) -> None:
        self._left = budget
        self._deadline = deadline
        self._until_clock = _CLOCK_EVERY

    def step(self) -> None:
        self._left -= 1
        if self._left < 0:
            raise BudgetExceeded(EXHAUSTED)
        self._until_clock -= 1
        if self._until_clock <= 0:
            self._until_clock = _CLOCK_EVERY
            if passed(self._deadline):
                raise BudgetExceeded(DEADLINE_PASSED)


def passed(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline
