"""Untrusted text made printable for people: terminals, logs, XML, label values.

Kernel-log lines and TensorRT build logs are written by users' jobs, and a bundle (its file
contents, its paths) by whoever sent it. Shown raw, such text can carry escape sequences
(ESC/CSI/OSC: clear the screen, retitle the terminal, write a hyperlink), BEL, a carriage
return that rewrites the line already printed, or bidi controls (U+202A-U+202E,
U+2066-U+2069) that reorder what a reader sees: a critical report can be hidden behind a fake
``OK``. Every output meant for people (the table and text reports, JUnit, Prometheus label
values, `explain`, the daemon's lines, error messages) shows such text through `printable`;
the JSON report keeps the exact text.

A character that is not printable (`str.isprintable`: C0 and C1 controls, DEL, format
characters such as the bidi and zero-width ones, line and paragraph separators, lone
surrogates from undecodable bytes, unassigned code points) is shown as its Python escape,
as `repr` shows it: ``\\x1b``, ``\\r``, ``\\u202e``. A tab stays a tab (whitespace, which
moves no text already printed; tab-aligned tools' output is common evidence). A backslash is
shown as it is: the escapes are for reading; the exact text is the JSON report's.
"""

from __future__ import annotations

_SHORT = {"\n": "\\n", "\r": "\\r"}


def printable(text: str) -> str:
    """`text` as one line a terminal shows as it is: every character that is not printable
    (a newline too) escaped; a tab kept."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch == "\t" else _escape(ch) for ch in text)


def printable_lines(text: str) -> list[str]:
    """The lines of `text` as `str.splitlines` gives them, but split at newlines only (a CRLF
    line end is a line end), each made `printable`: a lone CR, a vertical tab or U+2028 is
    shown escaped, never obeyed as a line break."""
    return printable_text(text.removesuffix("\n")).split("\n") if text else []


def printable_text(text: str) -> str:
    """`text` with its newlines kept and every line made `printable`."""
    return "\n".join(printable(line.removesuffix("\r")) for line in text.split("\n"))


def _escape(ch: str) -> str:
    short = _SHORT.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
