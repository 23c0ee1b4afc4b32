"""Quoting what a caller passed (a pattern, an argument) in a message, without echoing a flood.

A model may send a pattern of a megabyte; the message that refuses it names it, cut short.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_QUOTED_CHARS", "quote"]

MAX_QUOTED_CHARS: Final = 100
"""Characters of a quoted text shown before it is cut short."""


def quote(text: str) -> str:
    """``text`` as ``repr`` shows it, cut after :data:`MAX_QUOTED_CHARS` characters.

    Example:
        >>> quote("*.py"), quote("x" * 200)[-11:]
        ("'*.py'", '(200 chars)')
    """
    if len(text) <= MAX_QUOTED_CHARS:
        return repr(text)
    return f"{text[:MAX_QUOTED_CHARS]!r}… ({len(text)} chars)"
