"""What a regular expression's text says about its literals, read lexically.

Two questions grep asks before it searches, both answered by reading the pattern, never by
running it, and both conservative (a wrong answer only costs speed):

- :func:`required_literal`: a run of characters every match must contain, so a file whose
  bytes lack it is ruled out without decoding it (what makes grep fast over many files);
- :func:`longest_literal_run`: how long the longest literal is, since the regex module
  prepares a long literal in time that grows with the cube of its length.
"""

from __future__ import annotations

from typing import Final

import regex

__all__ = ["longest_literal_run", "may_be_verbose", "required_literal"]


def longest_literal_run(source: str) -> int:
    """The longest run of characters that stand for themselves in ``source`` (lexical, and
    an over-estimate: it only decides whether to guard the pattern)."""
    longest = run = 0
    i = 0
    while i < len(source):
        ch = source[i]
        if ch == "\\" and i + 1 < len(source) and not source[i + 1].isalnum():
            run += 1
            i += 2
        elif ch.isalnum() or ch in _PLAIN:
            run += 1
            i += 1
        else:
            run = 0
            i += 1
        longest = max(longest, run)
    return longest


_PLAIN: Final = frozenset(" _-,;:'\"=!@%&~`<>/")


def may_be_verbose(source: str) -> bool:
    """Whether verbose mode may be on (an appended alternative could land in a comment)."""
    return regex.search(r"\(\?[a-zA-Z]*x", source) is not None


def required_literal(pattern: str) -> str | None:
    """The longest run of literal characters any match of ``pattern`` must contain.

    Lexical and conservative: only characters outside every group, in a pattern with no
    alternation outside groups and no inline flag that changes what a literal means
    (``i``, ``x``); a character a quantifier follows is not part of a run. ``None`` when no
    run of 3 or more is certain.
    """
    if regex.search(r"\(\?[a-zA-Z-]*[ixIX]", pattern):
        return None
    runs: list[str] = []
    run: list[str] = []
    depth = 0
    i, size = 0, len(pattern)

    def cut(drop_last: bool = False) -> None:
        if drop_last and run:
            run.pop()
        runs.append("".join(run))
        run.clear()

    while i < size:
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1 : i + 2]
            if nxt and not nxt.isalnum() and depth == 0:
                run.append(nxt)
                i += 2
                continue
            cut()
            i += 2
            while i < size and pattern[i].isalnum():  # \x41, \u00e9, \N, \p...: skipped
                i += 1
            if i < size and pattern[i] == "{":
                i = _after(pattern, i, "}")
            continue
        if ch == "[":
            cut()
            i = _after_class(pattern, i)
            continue
        if ch == "(":
            cut()
            depth += 1
        elif ch == ")":
            cut()
            depth = max(0, depth - 1)
        elif ch == "|":
            if depth == 0:
                return None
        elif ch in "*+?{":
            cut(drop_last=True)
            if ch == "{":
                i = _after(pattern, i, "}")
                continue
        elif depth == 0 and (ch.isalnum() or ch in _PLAIN):
            run.append(ch)
        else:
            cut()
        i += 1
    cut()
    best = max(runs, key=len, default="")
    return best if len(best) >= 3 else None


def _after(pattern: str, start: int, closing: str) -> int:
    end = pattern.find(closing, start)
    return len(pattern) if end == -1 else end + 1


def _after_class(pattern: str, start: int) -> int:
    """The index after the character class opening at ``start`` (nested sets included)."""
    i = start + 1
    if pattern[i : i + 1] == "^":
        i += 1
    if pattern[i : i + 1] == "]":
        i += 1
    depth = 1
    while i < len(pattern) and depth:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        i += 1
    return i
