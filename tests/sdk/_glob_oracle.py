"""The regular-expression translation of globs, kept as an oracle for the automaton.

:mod:`ctxfs._workspace._glob` matches with an automaton that never backtracks. This is the
translation into a Python regular expression that it replaced (same syntax, same hidden-name
rules), so a property test can check that both agree on small inputs, where backtracking
stays cheap.
"""

from __future__ import annotations

import re
from typing import Final

from ctxfs._errors import PatternError
from ctxfs._workspace._glob import _class_end, _split_segments, _without_classes

__all__ = ["oracle_matches"]

MAX_ALTERNATIVES: Final = 1024
"""Upper bound on the number of patterns a brace expression may expand to."""

_SPECIAL: Final = frozenset("*?[]{},")
# One whole path segment that does not start with a dot.
_VISIBLE_SEGMENT: Final = r"(?!\.)[^/]+"
_NO_LEADING_DOT: Final = r"(?!\.)"


def oracle_matches(pattern: str, relpath: str) -> bool:
    """Whether ``relpath`` matches ``pattern``, by the regular-expression translation.

    Raises:
        PatternError: As :func:`ctxfs._workspace._glob.compile_glob` would.
    """
    if not pattern.strip("/"):
        raise PatternError(f"empty glob pattern {pattern!r}; write e.g. '*' or '**/*.py'")
    alternatives = _expand_braces(pattern)
    regexes = dict.fromkeys(_translate(alt, pattern) for alt in alternatives)
    source = "|".join(regexes)
    regex = re.compile(source if len(regexes) == 1 else f"(?:{source})")
    return regex.fullmatch(relpath) is not None


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
