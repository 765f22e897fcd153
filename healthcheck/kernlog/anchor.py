"""What marks a wanted kernel-log line (`Anchor`), declared by a check's kernel-log interest.

It lives with the kernel-log scan rather than with the other declarations so that the scan
imports no more than it needs; `sitscheck.contract` exports it as well.
"""

from __future__ import annotations

from msgspec import Struct


class Anchor(Struct, frozen=True):
    """A substring that marks a wanted kernel-log line (UTF-8, within one line), and how many
    neighbouring lines come with it (a report's detail lines)."""

    needle: bytes
    before: int = 0
    after: int = 0

    def __post_init__(self) -> None:
        if not self.needle or b"\n" in self.needle or b"\r" in self.needle:
            raise ValueError("an anchor's needle must be some text within one line")
        self.needle.decode("utf-8")  # UnicodeDecodeError (a ValueError): not UTF-8
