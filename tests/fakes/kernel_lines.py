"""Kernel-log helpers for tests: the lines some anchors want of a byte stream in chunks of any
size (`candidate_lines`), and a line handler that keeps the message and time of every line it
is fed (`KernelLogInterest(..., handler="fakes.kernel_lines:Seen")`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from sitscheck.kernlog.anchor import Anchor
from sitscheck.kernlog.candidates import LogLines, Windows, file_blocks


def candidate_lines(
    chunks: Iterable[bytes], anchors: Sequence[Anchor], head_lines: int = 0
) -> Iterator[str]:
    """The lines the anchors want, as the scan finds them for one check."""
    windows = Windows(anchors, head_lines)
    for block in LogLines(a.needle for a in anchors).blocks(file_blocks(chunks)):
        yield from windows.kept(block)


class Seen:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str | None]] = []

    def feed(self, text: str, time: str | None) -> None:
        self.lines.append((text, time))

    def finish(self) -> list[tuple[str, str | None]]:
        return self.lines
