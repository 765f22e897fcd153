"""Untrusted text (anything from the node or a bundle) as HTML text or an attribute's value."""

from __future__ import annotations

from html import escape


def html_text(value: object) -> str:
    """Control and format characters (escape sequences, bidi overrides) replaced, then
    escaped for HTML text and quoted attributes. Newlines and tabs stay (a `pre` keeps them)."""
    text = "".join(c if c.isprintable() or c in "\n\t" else "\ufffd" for c in str(value))
    return escape(text, quote=True)
