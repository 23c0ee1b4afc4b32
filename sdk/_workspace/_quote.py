"""Quoting what a caller passed (a pattern, an argument) in a message, without echoing a flood,
and showing a stored name that is not a workspace path.

A model may send a pattern of a megabyte; the message that refuses it names it, cut short
(:func:`quote`, kept with the path rules so that their refusals are cut short too).

A folder on disk (or a bucket) may hold names no workspace path can be: a newline or another
control character, a backslash, bytes that are not UTF-8 (Python holds them as lone
surrogates, which no request to a model can carry). A listing shows such a name with those
characters escaped and says it cannot be opened, so each entry stays one line, every tool
output stays valid Unicode, and the model does not try a path the tools refuse.
"""

from __future__ import annotations

from typing import Final

from ctxfs._errors import UnsafePathError
from ctxfs.sandbox._paths import MAX_QUOTED_CHARS, normalize_path, quote

__all__ = ["MAX_QUOTED_CHARS", "UNUSABLE_NAME", "quote", "shown_path", "usable_path"]

UNUSABLE_NAME: Final = (
    " (cannot be opened: the name holds a control character, a backslash or bytes that are"
    " not UTF-8)"
)
"""What a listing adds after a name :func:`usable_path` refuses."""

_ESCAPES: Final = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\\": "\\\\"}


def usable_path(path: str) -> bool:
    """Whether ``path``, as a store listed it, is a workspace path the tools can be given."""
    if path.isprintable() and "\\" not in path:
        return True  # the common case, without the full rules
    try:
        return normalize_path(path) == path
    except UnsafePathError:
        return False


def shown_path(path: str) -> str:
    r"""``path`` as a tool shows it: as it is when it is usable (:func:`usable_path`),
    otherwise with each character a path cannot hold escaped (a byte that is not UTF-8 as
    ``\xNN``), so that it is one line of valid Unicode.

    Example:
        >>> shown_path("/a/b.txt"), shown_path("/a/new\nline.txt"), shown_path("/a/\udcff.txt")
        ('/a/b.txt', '/a/new\\nline.txt', '/a/\\xff.txt')
    """
    if usable_path(path):
        return path
    return "".join(_escaped(c) for c in path)


def _escaped(char: str) -> str:
    code = ord(char)
    if char in _ESCAPES:
        return _ESCAPES[char]
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, as os.fsdecode holds it
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x20 or 0x7F <= code < 0xA0:
        return f"\\x{code:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return char
