"""Turn an agent-supplied path into a virtual workspace path, or refuse it and say why.

Virtual paths are POSIX paths rooted at ``/``, the workspace root. They are pure strings: the
rules here never touch storage, so they behave the same on every backend. Host-specific
checks (symlinks on local disk) live in :mod:`ctxfs.sandbox._local`.
"""

from __future__ import annotations

import re

from ctxfs._errors import UnsafePathError
from ctxfs._sections import reading_form

__all__ = [
    "MAX_NAME_BYTES",
    "MAX_PATH_BYTES",
    "MAX_QUOTED_CHARS",
    "case_key",
    "is_within",
    "normalize_path",
    "quote",
    "relative_to",
]

MAX_NAME_BYTES = 255
"""Longest name of a single path segment, in UTF-8 bytes (the common filesystem limit)."""

MAX_PATH_BYTES = 4096
"""Longest whole virtual path, in UTF-8 bytes."""

MAX_QUOTED_CHARS = 100
"""Characters of a quoted text shown before it is cut short."""

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:(//|$)")
_DRIVE = re.compile(r"^[A-Za-z]:(/|$)")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def quote(text: str) -> str:
    """``text`` as ``repr`` shows it, cut after :data:`MAX_QUOTED_CHARS` characters: a message
    that refuses what a caller passed names it without echoing a flood (a path of a megabyte
    would fill the whole answer and push out what the message says to do).

    Example:
        >>> quote("*.py"), quote("x" * 200)[-11:]
        ("'*.py'", '(200 chars)')
    """
    if len(text) <= MAX_QUOTED_CHARS:
        return repr(text)
    return f"{text[:MAX_QUOTED_CHARS]!r}… ({len(text)} chars)"


def normalize_path(raw: str) -> str:
    """Normalise an agent-supplied path into a virtual path rooted at ``/``.

    ``./a``, ``a//b`` and ``/a/./b`` normalise; relative paths are taken from the root; ``""``
    and ``"."`` mean the root. Names that merely contain dots (``report..final.md``,
    ``[...slug]``, ``...``) are ordinary names.

    Args:
        raw: The path as the agent (or user) wrote it.

    Returns:
        The normalised virtual path, always starting with ``/``, never ending with ``/``
        (except the root itself).

    Raises:
        UnsafePathError: The path uses ``..`` to climb above the root, starts with ``~``, is a
            URL (``s3://``, ``file://``) or a drive path, contains NUL, control characters or
            backslashes, or has an overlong name.
    """
    if not isinstance(raw, str):
        raise UnsafePathError(f"path must be a string, got {type(raw).__name__}")
    if _CONTROL.search(raw):
        raise UnsafePathError(
            f"path {quote(raw)} contains a NUL or control character; use a plain name", path=raw
        )
    if "\\" in raw:
        raise UnsafePathError(
            f"path {quote(raw)} contains a backslash; separate folders with '/'", path=raw
        )
    if raw.startswith("~"):
        raise UnsafePathError(
            f"path {quote(raw)} starts with '~'; home directories are outside the workspace, "
            "use a path from the workspace root such as '/notes.md'",
            path=raw,
        )
    if _SCHEME.match(raw) or _DRIVE.match(raw):
        raise UnsafePathError(
            f"path {quote(raw)} is a URL or drive path; give a workspace path such as "
            "'/data/x.txt'",
            path=raw,
        )
    parts: list[str] = []
    for segment in raw.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if not parts:
                raise UnsafePathError(
                    f"path {quote(raw)} climbs above the workspace root with '..'; "
                    "paths are rooted at '/'",
                    path=raw,
                )
            parts.pop()
            continue
        if len(segment.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            raise UnsafePathError(
                f"path {quote(raw)} has a name longer than {MAX_NAME_BYTES} bytes; shorten it",
                path=raw,
            )
        parts.append(segment)
    virtual = "/" + "/".join(parts)
    try:
        size = len(virtual.encode("utf-8"))
    except UnicodeEncodeError:
        raise UnsafePathError(
            f"path {quote(raw)} is not valid Unicode (lone surrogate); use a plain name", path=raw
        ) from None
    if size > MAX_PATH_BYTES:
        raise UnsafePathError(
            f"path is longer than {MAX_PATH_BYTES} bytes; use a shorter path", path=raw
        )
    return virtual


def case_key(path: str) -> str:
    """The form of a virtual path that read-only checks compare, with case folded.

    Disks are case-insensitive by default on macOS and Windows (and macOS also ignores the
    difference between composed and decomposed accents), so ``/TOOL_RESULTS/x`` or
    ``/tool_reſults/x`` may be the very file ``/tool_results/x``. Read-only areas are
    therefore compared on this key on every store: case folded the way either system folds
    it (a dotless ``ı`` meets ``i`` as on Windows, ``ſ`` meets ``s``) and compatibility
    forms unified. A name that only looks like a read-only area's to a reader is compared
    as that area too (see :func:`ctxfs._sections.reading_form`: characters that do not show
    and combining marks dropped, Cyrillic, Greek and small-capital lookalikes read as the
    Latin letters), so no listing can show a writable folder that passes for one. On a
    case-sensitive store this refuses a few more names than it must; it never lets one
    through.

    Example:
        >>> case_key("/TOOL_Results") == case_key("/tool_reſults") == "/tool_results"
        True
        >>> case_key("/t\u043e\u043el_results\u200b") == "/tool_results"
        True
    """
    return reading_form(path)


def is_within(path: str, prefix: str) -> bool:
    """Whether virtual ``path`` is ``prefix`` itself or lies below it.

    Both arguments must already be normalised. ``/a/bc`` is not within ``/a/b``.
    """
    if prefix == "/":
        return True
    return path == prefix or path.startswith(prefix + "/")


def relative_to(path: str, base: str) -> str:
    """``path`` relative to ``base``, without a leading ``/``.

    Both must be normalised and ``path`` must lie within ``base``.
    """
    if base == "/":
        return path[1:]
    if path == base:
        return ""
    return path[len(base) + 1 :]
