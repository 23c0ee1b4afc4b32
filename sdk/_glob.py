"""Glob patterns over virtual POSIX paths, matched the same way on every storage backend.

The matcher is pure: it never touches a filesystem, it only answers whether a path relative
to the search base matches. Every backend (memory, local, S3) lists its files and filters them
through the same :class:`GlobMatcher`, so a pattern means one thing everywhere.

Syntax (bash ``globstar`` / gitignore flavour):

- ``*`` any run of characters except ``/``; ``?`` one character except ``/``.
- ``[abc]``, ``[a-z]``, ``[!abc]`` / ``[^abc]`` one character from (or not from) the class; a
  class never matches ``/``. A ``]`` right after the opening ``[`` (or ``[!``) is a member.
  A literal ``[`` is written ``[[]``; :func:`escape_glob` escapes a whole name.
- ``{a,b,c}`` alternation; alternatives may be empty, nested and contain wildcards or ``/``.
- ``**`` as a whole segment matches zero or more whole segments (``a/**/b`` matches ``a/b``
  and ``a/x/y/b``); a trailing ``a/**`` matches everything *under* ``a`` but not ``a``
  itself. ``**`` inside a segment (``a**b``) behaves like ``*``.
- A pattern without ``/`` matches the file name at any depth (``*.py`` is ``**/*.py``); a
  pattern with ``/`` is anchored at the base, and a leading ``/`` only anchors (``/*.py``
  matches top-level files only). Repeated and trailing slashes are ignored.
- Hidden names: a path segment that starts with ``.`` is matched only by a pattern segment
  that starts with a literal ``.`` (``.env``, ``.*``, ``.git/**``, ``**/.cache/*``). Wildcards
  and classes at the start of a segment, and ``**``, never match a leading dot, so
  ``**/*.py`` skips ``.venv/x.py`` and ``a/.hidden.py``.
- Everything else is literal, including ``\\`` (there is no backslash escaping) and a ``}``
  or ``,`` outside braces. Matching is case-sensitive.

Errors: an empty pattern, an unclosed ``[`` or ``{``, a reversed range such as ``[z-a]``, or
braces expanding to more than :data:`MAX_ALTERNATIVES` patterns raise
:class:`~ctxfs._errors.PatternError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from ctxfs._errors import PatternError

__all__ = ["MAX_ALTERNATIVES", "GlobMatcher", "compile_glob", "escape_glob"]

MAX_ALTERNATIVES: Final = 1024
"""Upper bound on the number of patterns a brace expression may expand to."""

_SPECIAL: Final = frozenset("*?[]{},")
# One whole path segment that does not start with a dot.
_VISIBLE_SEGMENT: Final = r"(?!\.)[^/]+"
_NO_LEADING_DOT: Final = r"(?!\.)"


@dataclass(frozen=True, slots=True)
class GlobMatcher:
    """A compiled glob pattern; build it with :func:`compile_glob`.

    Attributes:
        pattern: The glob pattern as given.
    """

    pattern: str
    _regex: re.Pattern[str]

    def matches(self, relpath: str) -> bool:
        """Tell whether a path matches the pattern.

        Args:
            relpath: Path relative to the search base, ``/``-separated, without a leading
                slash, e.g. ``"src/a.py"``.

        Returns:
            True if the whole path matches.
        """
        return self._regex.fullmatch(relpath) is not None


def compile_glob(pattern: str) -> GlobMatcher:
    """Compile a glob pattern (syntax in the module docstring).

    Args:
        pattern: The glob, e.g. ``"**/*.py"``, ``"src/{a,b}/*.md"`` or ``".env"``.

    Returns:
        A matcher for paths relative to the search base.

    Raises:
        PatternError: The pattern is empty, has an unclosed ``[`` or ``{``, a reversed
            character range, or expands to too many alternatives.
    """
    if not pattern.strip("/"):
        raise PatternError(f"empty glob pattern {pattern!r}; write e.g. '*' or '**/*.py'")
    alternatives = _expand_braces(pattern)
    regexes = dict.fromkeys(_translate(alt, pattern) for alt in alternatives)
    source = "|".join(regexes)
    return GlobMatcher(pattern, re.compile(source if len(regexes) == 1 else f"(?:{source})"))


def escape_glob(name: str) -> str:
    """Escape a file name or path so that it matches itself literally as a glob.

    Each special character (``* ? [ ] { } ,``) is wrapped in a one-member class, e.g.
    ``[...slug].tsx`` becomes ``[[]...slug[]].tsx``. Slashes stay separators.

    Args:
        name: The literal name or relative path.

    Returns:
        A glob pattern with no wildcards left. Like any pattern, it is anchored at the base
        if it contains ``/`` and matches the name at any depth otherwise; prefix ``/`` to
        match exactly ``name``.
    """
    return "".join(f"[{ch}]" if ch in _SPECIAL else ch for ch in name)


def _class_end(text: str, start: int, pattern: str) -> int:
    """Return the index just past the ``]`` closing the class that opens at ``start``."""
    i = start + 1
    if i < len(text) and text[i] in "!^":
        i += 1
    if i < len(text) and text[i] == "]":
        i += 1  # a leading ']' is a member, not the end
    end = text.find("]", i)
    if end == -1:
        raise PatternError(
            f"unclosed '[' at position {start} in glob pattern {pattern!r}; "
            "write a literal '[' as '[[]'"
        )
    return end + 1


def _expand_braces(pattern: str) -> list[str]:
    """Expand ``{a,b}`` groups (nested too) into plain patterns, classes left as text."""

    def parse_seq(i: int, in_brace: bool) -> tuple[list[str], int]:
        # Parse a sequence until '}' or ',' (inside braces) or the end; return its expansions
        # and the index of the terminator.
        results = [""]
        while i < len(pattern):
            ch = pattern[i]
            if ch == "[":
                end = _class_end(pattern, i, pattern)
                chunk = pattern[i:end]
                results = [r + chunk for r in results]
                i = end
            elif ch == "{":
                options: list[str] = []
                j = i + 1
                while True:
                    alts, j = parse_seq(j, in_brace=True)
                    options.extend(alts)
                    if j >= len(pattern):
                        raise PatternError(
                            f"unclosed '{{' at position {i} in glob pattern {pattern!r}; "
                            "write a literal '{' as '[{]'"
                        )
                    if pattern[j] == "}":
                        break
                    j += 1  # skip ','
                results = [r + o for r in results for o in dict.fromkeys(options)]
                if len(results) > MAX_ALTERNATIVES:
                    raise PatternError(
                        f"glob pattern {pattern!r} expands to more than {MAX_ALTERNATIVES} "
                        "alternatives; use fewer '{...}' groups"
                    )
                i = j + 1
            elif in_brace and ch in ",}":
                return results, i
            else:
                results = [r + ch for r in results]
                i += 1
        return results, i

    expanded, _ = parse_seq(0, in_brace=False)
    return expanded


def _translate(glob: str, pattern: str) -> str:
    """Translate one brace-free glob into a regular expression for ``fullmatch``."""
    anchored = "/" in _without_classes(glob, pattern)
    segments = [s for s in _split_segments(glob, pattern) if s]
    if not anchored:
        segments.insert(0, "**")
    # Consecutive '**' segments mean the same as one; collapsing avoids nested quantifiers.
    collapsed: list[str] = []
    for seg in segments:
        if not (seg == "**" and collapsed and collapsed[-1] == "**"):
            collapsed.append(seg)
    if not collapsed:  # e.g. the pattern '{,}' or '{/,}': nothing left to match
        return r"(?!)"
    out: list[str] = []
    last = len(collapsed) - 1
    for index, seg in enumerate(collapsed):
        if seg == "**" and index < last:
            out.append(f"(?:{_VISIBLE_SEGMENT}/)*")
        elif seg == "**":
            out.append(f"{_VISIBLE_SEGMENT}(?:/{_VISIBLE_SEGMENT})*")
        else:
            out.append(_translate_segment(seg, pattern))
            if index < last:
                out.append("/")
    return "".join(out)


def _without_classes(glob: str, pattern: str) -> str:
    """Return the glob with every ``[...]`` class removed (to look for real separators)."""
    parts: list[str] = []
    i = 0
    while i < len(glob):
        if glob[i] == "[":
            i = _class_end(glob, i, pattern)
        else:
            parts.append(glob[i])
            i += 1
    return "".join(parts)


def _split_segments(glob: str, pattern: str) -> list[str]:
    """Split a glob on ``/`` separators, keeping classes (which may contain ``/``) whole."""
    segments: list[str] = []
    current: list[str] = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if ch == "[":
            end = _class_end(glob, i, pattern)
            current.append(glob[i:end])
            i = end
            continue
        if ch == "/":
            segments.append("".join(current))
            current = []
        else:
            current.append(ch)
        i += 1
    segments.append("".join(current))
    return segments


def _translate_segment(segment: str, pattern: str) -> str:
    """Translate one segment (no separators, not a lone ``**``) into a regex."""
    out: list[str] = []
    i = 0
    while i < len(segment):
        ch = segment[i]
        at_start = i == 0
        if ch == "*":
            while i < len(segment) and segment[i] == "*":
                i += 1
            out.append((_NO_LEADING_DOT if at_start else "") + "[^/]*")
            continue
        if ch == "?":
            out.append((_NO_LEADING_DOT if at_start else "") + "[^/]")
        elif ch == "[":
            end = _class_end(segment, i, pattern)
            out.append((_NO_LEADING_DOT if at_start else "") + _translate_class(segment[i:end]))
            i = end
            continue
        else:
            out.append(re.escape(ch))
        i += 1
    return "".join(out)


def _translate_class(text: str) -> str:
    """Translate a whole ``[...]`` glob class into a regex class that never matches ``/``."""
    body = text[1:-1]
    negated = body[:1] in ("!", "^")
    if negated:
        body = body[1:]
    items: list[str] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            low, high = body[i], body[i + 2]
            if low > high:
                raise PatternError(
                    f"reversed range '{low}-{high}' in glob class {text!r}; write '{high}-{low}'"
                )
            items.append(f"{re.escape(low)}-{re.escape(high)}")
            i += 3
        else:
            items.append(re.escape(body[i]))
            i += 1
    members = "".join(items)
    if negated:
        return f"[^/{members}]"
    return f"(?!/)[{members}]"
