"""A kernel-log line handler for tests: it keeps the message and time of every line it is fed
(`KernelLogInterest(..., handler="fakes.kernel_lines:Seen")`)."""

from __future__ import annotations


class Seen:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str | None]] = []

    def feed(self, text: str, time: str | None) -> None:
        self.lines.append((text, time))

    def finish(self) -> list[tuple[str, str | None]]:
        return self.lines
