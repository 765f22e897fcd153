"""What marks a wanted kernel-log line (`Anchor`), declared by a check's kernel-log interest.

It lives with the kernel-log scan rather than with the other declarations so that the scan's
pre-filter (`chunks`, and the worker process that runs it beside a large log's reader,
`prefilter_worker`) imports no more than it needs; `sitscheck.contract` exports it as well.
"""

from __future__ import annotations

from msgspec import Struct


class Anchor(Struct, frozen=True):
    """A substring that marks a wanted kernel-log line, and how many neighbouring lines come
    with it (a report's detail lines)."""

    needle: bytes
    before: int = 0
    after: int = 0

    def __post_init__(self) -> None:
        if not self.needle:
            raise ValueError("an anchor's needle must not be empty")
