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

Matching never backtracks: a pattern compiles to an :class:`~ctxfs._workspace._automaton.Automaton`,
which reads a path once, one step per character, so no pattern (``*a*a*a*a*a*a*a*b``
included) can make a match slow. Brace expansion is measured before anything is expanded.

Errors: an empty pattern, an unclosed ``[`` or ``{``, a reversed range such as ``[z-a]``,
braces nested deeper than :data:`MAX_BRACE_DEPTH`, or braces expanding to more than
:data:`MAX_ALTERNATIVES` patterns or :data:`MAX_EXPANDED_CHARS` characters raise
:class:`~ctxfs._errors.PatternError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from ctxfs._errors import PatternError
from ctxfs._workspace._automaton import UNSET, Automaton, CharTest
from ctxfs._workspace._quote import quote

__all__ = [
    "MAX_ALTERNATIVES",
    "MAX_BRACE_DEPTH",
    "MAX_EXPANDED_CHARS",
    "GlobMatcher",
    "compile_glob",
    "escape_glob",
]

MAX_ALTERNATIVES: Final = 1024
"""Upper bound on the number of patterns a brace expression may expand to."""

MAX_EXPANDED_CHARS: Final = 65_536
"""Upper bound on the characters of all those patterns together (and of the pattern itself)."""

MAX_BRACE_DEPTH: Final = 32
"""How deep ``{...}`` groups may nest."""

_SPECIAL: Final = frozenset("*?[]{},")


@dataclass(frozen=True, slots=True)
class GlobMatcher:
    """A compiled glob pattern; build it with :func:`compile_glob`.

    Attributes:
        pattern: The glob pattern as given.
    """

    pattern: str
    _automaton: Automaton

    def matches(self, relpath: str, deadline: float | None = None) -> bool:
        """Tell whether a path matches the pattern.

        Args:
            relpath: Path relative to the search base, ``/``-separated, without a leading
                slash, e.g. ``"src/a.py"``.
            deadline: A :func:`time.monotonic` time by which matching must be done. The
                time is linear in the path's length, but a pattern of many ``{...}``
                alternatives makes each step costly the first time it is taken.

        Returns:
            True if the whole path matches.

        Raises:
            TimeoutError: The deadline passed.
        """
        return self._automaton.matches(relpath, deadline)


def compile_glob(pattern: str) -> GlobMatcher:
    """Compile a glob pattern (syntax in the module docstring).

    Args:
        pattern: The glob, e.g. ``"**/*.py"``, ``"src/{a,b}/*.md"`` or ``".env"``.

    Returns:
        A matcher for paths relative to the search base.

    Raises:
        PatternError: The pattern is empty, has an unclosed ``[`` or ``{``, a reversed
            character range, or expands to too many alternatives or characters.
    """
    if not pattern.strip("/"):
        raise PatternError(f"empty glob pattern {quote(pattern)}; write e.g. '*' or '**/*.py'")
    if len(pattern) > MAX_EXPANDED_CHARS:
        raise PatternError(
            f"glob pattern is longer than {MAX_EXPANDED_CHARS} characters; use a shorter one"
        )
    tree = _parse_braces(pattern)
    _measure(tree, pattern)  # refuses an explosion before anything is expanded
    builder = _Builder(pattern)
    starts = [builder.add(alternative) for alternative in dict.fromkeys(_expand(tree))]
    builder.automaton.start(start for start in starts if start is not None)
    return GlobMatcher(pattern, builder.automaton)


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
            f"unclosed '[' at position {start} in glob pattern {quote(pattern)}; "
            "write a literal '[' as '[[]'"
        )
    return end + 1


# -- braces ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Braces:
    """One ``{a,b,...}`` group: each option is a sequence like the pattern itself."""

    options: tuple[_Sequence, ...]


_Sequence = tuple[str | _Braces, ...]


def _parse_braces(pattern: str) -> _Sequence:
    """The pattern as text and ``{...}`` groups (classes stay text), without expanding."""

    def parse_seq(i: int, depth: int) -> tuple[_Sequence, int]:
        # Parse until '}' or ',' (inside braces) or the end; return the parts and the index
        # of the terminator.
        parts: list[str | _Braces] = []
        text: list[str] = []
        while i < len(pattern):
            ch = pattern[i]
            if ch == "[":
                end = _class_end(pattern, i, pattern)
                text.append(pattern[i:end])
                i = end
            elif ch == "{":
                if depth >= MAX_BRACE_DEPTH:
                    raise PatternError(
                        f"glob pattern {quote(pattern)} nests '{{' more than {MAX_BRACE_DEPTH} "
                        "deep; use fewer nested groups"
                    )
                options: list[_Sequence] = []
                j = i + 1
                while True:
                    option, j = parse_seq(j, depth + 1)
                    options.append(option)
                    if j >= len(pattern):
                        raise PatternError(
                            f"unclosed '{{' at position {i} in glob pattern {quote(pattern)}; "
                            "write a literal '{' as '[{]'"
                        )
                    if pattern[j] == "}":
                        break
                    j += 1  # skip ','
                if text:
                    parts.append("".join(text))
                    text = []
                parts.append(_Braces(tuple(options)))
                i = j + 1
            elif depth and ch in ",}":
                break
            else:
                text.append(ch)
                i += 1
        if text:
            parts.append("".join(text))
        return tuple(parts), i

    return parse_seq(0, 0)[0]


def _measure(sequence: _Sequence, pattern: str) -> tuple[int, int]:
    """How many patterns ``sequence`` expands to and their characters together.

    Raises:
        PatternError: Either number passes its cap; the running totals are checked after
            every part, so the numbers stay small and nothing is allocated.
    """
    count, chars = 1, 0
    for part in sequence:
        if isinstance(part, str):
            part_count, part_chars = 1, len(part)
        else:
            part_count = part_chars = 0
            for option in part.options:
                option_count, option_chars = _measure(option, pattern)
                part_count += option_count
                part_chars += option_chars
                _check_size(part_count, part_chars, pattern)
        chars = chars * part_count + part_chars * count
        count *= part_count
        _check_size(count, chars, pattern)
    return count, chars


def _check_size(count: int, chars: int, pattern: str) -> None:
    if count > MAX_ALTERNATIVES:
        raise PatternError(
            f"glob pattern {quote(pattern)} expands to more than {MAX_ALTERNATIVES} "
            "alternatives; use fewer '{...}' groups"
        )
    if chars > MAX_EXPANDED_CHARS:
        raise PatternError(
            f"glob pattern {quote(pattern)} expands to more than {MAX_EXPANDED_CHARS} "
            "characters; use fewer or shorter '{...}' alternatives"
        )


def _expand(sequence: _Sequence) -> list[str]:
    """Every brace-free pattern of a measured sequence, in order."""
    results = [""]
    for part in sequence:
        if isinstance(part, str):
            results = [r + part for r in results]
        else:
            options = dict.fromkeys(alt for option in part.options for alt in _expand(option))
            results = [r + o for r in results for o in options]
    return results


# -- one brace-free pattern -> automaton nodes ------------------------------------------------


def _not_slash(ch: str) -> bool:
    return ch != "/"


def _is_slash(ch: str) -> bool:
    return ch == "/"


class _Builder:
    """Adds brace-free globs to one automaton, sharing the nodes of equal endings.

    Alternatives from braces often end alike (``{a,b}*.py``); a piece of the automaton is
    keyed by everything that follows it, so each distinct ending is built once and fewer
    nodes are active at a time while matching.
    """

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.automaton = Automaton()
        self.accept = self.automaton.accept()
        self._built: dict[tuple[object, ...], int] = {}

    def _shared(self, key: tuple[object, ...], make: Callable[..., int], *args: object) -> int:
        """The node built by ``make(*args)`` for ``key``, built the first time it is asked."""
        node = self._built.get(key)
        if node is None:
            node = self._built[key] = make(*args)
        return node

    def add(self, glob: str) -> int | None:
        """Add one brace-free glob; return its start node (``None``: it matches nothing, as
        the alternative ``''`` of ``{,}``)."""
        anchored = "/" in _without_classes(glob, self.pattern)
        segments = [s for s in _split_segments(glob, self.pattern) if s]
        if not anchored:
            segments.insert(0, "**")
        # Consecutive '**' segments mean the same as one.
        collapsed: list[str] = []
        for seg in segments:
            if not (seg == "**" and collapsed and collapsed[-1] == "**"):
                collapsed.append(seg)
        if not collapsed:
            return None
        automaton = self.automaton
        node = self.accept
        last = len(collapsed) - 1
        # Built from the end: each piece leads to the node built before it.
        for index in range(last, -1, -1):
            seg = collapsed[index]
            rest = tuple(collapsed[index + 1 :])
            then = node
            if seg == "**" and index < last:
                node = self._shared(("any-names", *rest), _any_segments_then, automaton, then)
            elif seg == "**":
                node = self._shared(("names",), _one_or_more_segments, automaton, then)
            else:
                if index < last:
                    node = self._shared(("slash", *rest), automaton.char, _is_slash, then)
                node = self._segment(seg, rest, node)
        return node

    def _segment(self, segment: str, rest: tuple[str, ...], then: int) -> int:
        """One segment (no separators, not a lone ``**``), built backwards from ``then``."""
        pieces: list[tuple[int, CharTest | None]] = []  # (offset, test); None for a '*' run
        i = 0
        while i < len(segment):
            ch = segment[i]
            start = i
            if ch == "*":
                while i < len(segment) and segment[i] == "*":
                    i += 1
                pieces.append((start, None))
                continue
            if ch == "?":
                pieces.append((start, _not_slash))
            elif ch == "[":
                end = _class_end(segment, i, self.pattern)
                pieces.append((start, _class_test(segment[i:end])))
                i = end
                continue
            else:
                pieces.append((start, ch.__eq__))
            i += 1
        automaton = self.automaton
        node = then
        for offset, test in reversed(pieces):
            key = ("piece", segment[offset:], *rest)
            if test is None:
                node = self._shared(key, _any_name_chars, automaton, node)
            else:
                node = self._shared(key, automaton.char, test, node)
        if segment[0] in "*?[":  # a wildcard or a class never matches a leading dot
            node = self._shared(("no-dot", segment, *rest), automaton.no_dot, node)
        return node


def _any_name_chars(automaton: Automaton, then: int) -> int:
    """``*``: any run of characters other than ``/``, then ``then``."""
    loop = automaton.fork(UNSET, then)
    automaton.patch(loop, automaton.char(_not_slash, loop))
    return loop


def _visible_segment(automaton: Automaton, after: int) -> tuple[int, int]:
    """Nodes for one name that does not start with a dot: ``(start, fork)``, where the fork
    goes on in the name or to ``after`` (which may be UNSET, for the caller to patch)."""
    more = automaton.fork(UNSET, after)
    automaton.patch(more, automaton.char(_not_slash, more))
    start = automaton.no_dot(automaton.char(_not_slash, more))
    return start, more


def _any_segments_then(automaton: Automaton, then: int) -> int:
    """``**/`` in the middle: zero or more visible names, each followed by ``/``."""
    loop = automaton.fork(UNSET, then)
    slash = automaton.char(_is_slash, loop)
    start, _ = _visible_segment(automaton, slash)
    automaton.patch(loop, start)
    return loop


def _one_or_more_segments(automaton: Automaton, then: int) -> int:
    """A final ``**``: one or more visible names separated by ``/``."""
    start, more = _visible_segment(automaton, UNSET)
    again = automaton.fork(automaton.char(_is_slash, start), then)
    # The fork inside the name goes on in the name (its first branch) or to ``again``.
    automaton.patch_second(more, again)
    return start


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


def _class_test(text: str) -> CharTest:
    """The test of a whole ``[...]`` glob class; a class never matches ``/``."""
    body = text[1:-1]
    negated = body[:1] in ("!", "^")
    if negated:
        body = body[1:]
    singles: list[str] = []
    ranges: list[tuple[str, str]] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            low, high = body[i], body[i + 2]
            if low > high:
                raise PatternError(
                    f"reversed range '{low}-{high}' in glob class {quote(text)}; "
                    f"write '{high}-{low}'"
                )
            ranges.append((low, high))
            i += 3
        else:
            singles.append(body[i])
            i += 1
    members = frozenset(singles)
    spans = tuple(ranges)

    def test(ch: str) -> bool:
        if ch == "/":
            return False
        inside = ch in members or any(low <= ch <= high for low, high in spans)
        return inside != negated

    return test
