"""A pure grep engine over ``(virtual path, bytes)`` pairs.

The Workspace lists and fetches files (concurrently where the backend allows it) and hands
each one to :func:`search_file`; nothing here touches storage, so results are identical on
every backend.

Line semantics (the default, ``multiline=False``), as in ripgrep:

- A line is the text between ``\\n`` separators; a final ``\\n`` does not start an extra
  empty line, and an empty file has no lines. A trailing ``\\r`` is removed from every line
  before matching and printing, so ``$`` matches at the end of CRLF lines. A UTF-8 byte
  order mark at the start of the file is ignored.
- A match never spans a line break: ``a\\sb`` does not match ``"a\\nb"``; ``^`` and ``$``
  anchor at line starts and ends.
- Data containing a NUL byte is binary and skipped; other bytes are decoded as UTF-8 with
  invalid sequences replaced by U+FFFD.

For speed the whole decoded text is searched at once and match offsets are mapped to line
numbers by counting newlines; only a line whose match crossed a line break is re-checked on
its own. Patterns whose meaning depends on what lies beyond the line (``\\A``, ``\\Z``,
``\\G``, ``\\K``, lookarounds, atomic groups, possessive quantifiers) are searched line by
line instead, which is slower but exact.

With ``multiline=True`` the pattern runs over the whole text with ``.`` matching newlines
(like ``rg -U --multiline-dotall``); every line a match touches is a matching line.

Every call into the regex engine runs under one deadline, handed to :func:`search_file` by
the caller: a grep shares one :class:`~ctxfs.sandbox.TimeBudget` of ``GrepOptions.timeout``
seconds between all its files, so the limit holds for the whole call, not per regex call.
Passing it raises :class:`~ctxfs._errors.SearchTimeoutError`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, TypeVar, get_args

import regex

from ctxfs._errors import PatternError, SearchTimeoutError
from ctxfs._workspace._literals import longest_literal_run, may_be_verbose
from ctxfs._workspace._prefilter import literal_finder, prefilter_for
from ctxfs._workspace._quote import quote
from ctxfs._workspace._results import FileResult, GrepLine, OutputMode

__all__ = [
    "MAX_PATTERN_CHARS",
    "FileResult",
    "GrepLine",
    "GrepOptions",
    "OutputMode",
    "apply_paging",
    "compile_pattern",
    "prefilter",
    "search_file",
    "timeout_error",
]

_OUTPUT_MODES: Final = get_args(OutputMode)

# Constructs that let a match depend on text outside its own line (or that cannot give back
# what they consumed across a newline); their presence sends the search down the exact
# line-by-line path. The check is lexical and errs towards the slow path.
_CONTEXT_ESCAPES: Final = frozenset("AZGK")
_CONTEXT_GROUPS: Final = ("(?=", "(?!", "(?<=", "(?<!", "(?>")
_QUANTIFIER_ENDS: Final = frozenset("*+?}")
_CHUNK_CHARS: Final = 1 << 20
_CANDIDATE_LINES: Final = 32
"""Lines holding a search's literal, searched one by one, before the whole text is."""
_LONG_LITERAL: Final = 128
"""Literal runs this long or longer are kept from the regex module's literal preparation."""
MAX_PATTERN_CHARS: Final = 20_000
"""The longest pattern grep takes (parsing one costs about 3 µs a character)."""

_T = TypeVar("_T")
_Span = tuple[int, int, int, bool]  # (line number, start offset, end offset, is_match)


@dataclass(frozen=True, slots=True, kw_only=True)
class GrepOptions:
    """What to search for and how to report it.

    Attributes:
        pattern: Regular expression (``regex`` module syntax), or a literal string when
            ``fixed_strings`` is set.
        fixed_strings: Treat ``pattern`` as a literal string.
        ignore_case: Match case-insensitively, with full Unicode case folding.
        multiline: Let matches span lines; ``.`` matches newlines too.
        output_mode: ``"files_with_matches"`` stops at the first match of a file,
            ``"count"`` counts, ``"content"`` also returns the lines.
        before: Context lines before each match (``-B``); content mode only.
        after: Context lines after each match (``-A``); content mode only.
        max_line_chars: Longer returned lines are clipped to this many characters plus a
            marker saying how long the line was.
        timeout: Seconds of matching the whole grep may use, over all its files (the
            deadline each :func:`search_file` call gets is what is left of it).
    """

    pattern: str
    fixed_strings: bool = False
    ignore_case: bool = False
    multiline: bool = False
    output_mode: OutputMode = "files_with_matches"
    before: int = 0
    after: int = 0
    max_line_chars: int = 2000
    timeout: float = 5.0

    def __post_init__(self) -> None:
        if self.output_mode not in _OUTPUT_MODES:
            raise ValueError(
                f"output_mode must be one of {_OUTPUT_MODES}, not {self.output_mode!r}"
            )
        if self.before < 0 or self.after < 0:
            raise ValueError("before and after must be 0 or more context lines")
        if self.max_line_chars < 1:
            raise ValueError("max_line_chars must be at least 1")
        if not self.timeout > 0:
            raise ValueError("timeout must be a positive number of seconds")


def compile_pattern(options: GrepOptions) -> regex.Pattern[str]:
    """Compile the search pattern once, for use with every file.

    Args:
        options: The search options; uses ``pattern``, ``fixed_strings``, ``ignore_case``
            and ``multiline``.

    Returns:
        The compiled pattern, flags set for the search mode.

    Raises:
        PatternError: The regular expression is invalid; the message carries the regex
            engine's own explanation.
    """
    if len(options.pattern) > MAX_PATTERN_CHARS:
        # The regex module parses a pattern at about 3 µs a character, before any timeout
        # applies (a megabyte: 3 s).
        raise PatternError(
            f"the pattern {quote(options.pattern)} is longer than grep takes "
            f"({MAX_PATTERN_CHARS:,} characters); search for a distinctive part of it"
        )
    source = regex.escape(options.pattern) if options.fixed_strings else options.pattern
    flags = regex.MULTILINE
    if options.ignore_case:
        flags |= regex.IGNORECASE | regex.FULLCASE
    if options.multiline:
        flags |= regex.DOTALL
    try:
        if (
            longest_literal_run(source) >= _LONG_LITERAL
            and not may_be_verbose(source)
            and not source.endswith("\\")  # it would escape the "|": compiled as it is
        ):
            # The regex module prepares a long literal (one that starts a pattern, or one a
            # match requires) in time that grows with the cube of its length, before any
            # timeout applies. An alternative that never matches turns that off.
            return regex.compile(source + "|(?!)", flags)
        return regex.compile(source, flags)
    except regex.error as exc:
        raise PatternError(
            f"invalid regular expression {quote(options.pattern)}: {exc}; "
            "to search for the text literally, use fixed_strings"
        ) from exc
    except RecursionError:
        # The regex module parses nested groups recursively.
        raise PatternError(
            f"invalid regular expression {quote(options.pattern)}: groups nested too deeply; "
            "use a flatter pattern, or fixed_strings to search for the text literally"
        ) from None


def search_file(
    path: str,
    data: bytes,
    compiled: regex.Pattern[str],
    options: GrepOptions,
    *,
    deadline: float | None = None,
    screened: bool = False,
) -> FileResult:
    """Search the contents of one file.

    Args:
        path: The file's virtual path, used in the result and in error messages.
        data: The file's bytes.
        compiled: The pattern from :func:`compile_pattern` for the same ``options``.
        options: The search options.
        deadline: The :func:`time.monotonic` time by which the search must be done; by
            default ``options.timeout`` seconds from now (a grep of one file).
        screened: The caller has found no NUL byte in ``data`` and :func:`prefilter` let
            it through (a grep over many files tests them before it calls here).

    Returns:
        The file's result; ``binary=True`` with no matches if ``data`` contains a NUL byte.

    Raises:
        SearchTimeoutError: The deadline passed.
    """
    if deadline is None:
        deadline = time.monotonic() + options.timeout
    if not screened:
        if data.find(b"\x00") >= 0:  # find, not `in` (see _prefilter)
            return FileResult(path, binary=True)
        if _ruled_out(data, options):
            return FileResult(path)  # a byte scan rules the file out without decoding it
    if options.output_mode != "content" and not options.multiline:
        try:
            count = _count_literal_lines(data, compiled, options, deadline)
        except TimeoutError as exc:
            raise timeout_error(path, options) from exc
        if count is not None:
            return FileResult(path, match_count=count)
    text = data.decode("utf-8", errors="replace")
    text = text.removeprefix("\ufeff")
    if not text:
        return FileResult(path)
    # Dropping '\r' before each '\n' keeps line numbers and equals stripping it per line.
    full = text.replace("\r\n", "\n") if "\r" in text else text
    # The final newline ends the last line, it does not start another one.
    body = full[:-1] if full.endswith("\n") else full.removesuffix("\r")
    first_only = options.output_mode == "files_with_matches"
    try:
        if options.multiline:
            spans, count = _multiline_spans(full, len(body), compiled, deadline, first_only)
        elif (literal := _literal_search(options, body)) is not None:
            spans = list(_literal_spans(body, *literal, deadline, first_only))
            count = len(spans)
        elif _needs_line_loop(options):
            spans = list(_line_loop_spans(body, compiled, deadline, first_only))
            count = len(spans)
        else:
            spans = list(_fast_spans(body, compiled, deadline, first_only))
            count = len(spans)
    except TimeoutError as exc:
        raise timeout_error(path, options) from exc
    if options.output_mode != "content":
        return FileResult(path, match_count=count)
    lines = _with_context(body, spans, options.before, options.after)
    gaps = options.before > 0 or options.after > 0
    out: list[GrepLine] = []
    previous = 0
    for number, start, end, is_match in lines:
        gap = gaps and previous > 0 and number > previous + 1
        out.append(GrepLine(number, _clip(body[start:end], options.max_line_chars), is_match, gap))
        previous = number
    return FileResult(path, match_count=count, lines=tuple(out))


def timeout_error(path: str, options: GrepOptions) -> SearchTimeoutError:
    """The error for a grep that ran out of time while searching ``path``."""
    return SearchTimeoutError(
        f"grep ran past its {options.timeout:g} s time limit while searching {path} for "
        f"{quote(options.pattern)}; the pattern may backtrack catastrophically or the search "
        "covers too much text: try a simpler pattern, fixed_strings, or a narrower path or glob",
        path=path,
    )


def _time_left(deadline: float) -> float:
    """Seconds until ``deadline``, for the regex engine's ``timeout``.

    Raises:
        TimeoutError: The deadline has passed.
    """
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the search ran past its deadline")
    return left


def _ruled_out(data: bytes, options: GrepOptions) -> bool:
    """Whether the file's bytes lack a literal every match must hold (so nothing matches)."""
    return not prefilter(options)(data)


def prefilter(options: GrepOptions) -> Callable[[bytes], bool]:
    """A test on a file's bytes: ``False`` when no match can be in it, without decoding it
    (see :mod:`ctxfs._workspace._prefilter`). A test that can rule nothing out answers
    ``True``."""
    return prefilter_for(options.pattern, options.fixed_strings, options.ignore_case)


def _count_literal_lines(
    data: bytes, compiled: regex.Pattern[str], options: GrepOptions, deadline: float
) -> int | None:
    """Matching lines counted by searching only the lines whose bytes hold the literal every
    match holds (in ``files_with_matches`` mode, up to the first), each decoded on its own.

    Exact: a line that matches holds the literal, and each line is searched as the
    line-by-line path searches it (decoding never moves a ``\\n``, and a line loses its
    byte order mark and final ``\\r`` as the whole text does). ``None`` where it does not
    apply (no literal known; case-insensitive over bytes that are not ASCII; a pattern
    that needs the line loop) or when more than ``_CANDIDATE_LINES`` lines hold the
    literal: then the whole text is searched at once.
    """
    find = literal_finder(options.pattern, options.fixed_strings, options.ignore_case)
    if find is None or (options.ignore_case and not data.isascii()) or _needs_line_loop(options):
        return None
    first_only = options.output_mode == "files_with_matches"
    needle = options.pattern.lower() if options.ignore_case else options.pattern

    def matches(line: str) -> bool:
        if not options.fixed_strings:
            return _line_matches(line, compiled, deadline)
        _time_left(deadline)  # a fixed string never reaches the regex module (see _literal_search)
        return needle in (line.lower() if options.ignore_case else line)

    count = 0
    hit = find(data, 0)
    for _ in range(_CANDIDATE_LINES):
        if hit < 0:
            return count
        start = data.rfind(b"\n", 0, hit) + 1
        end = data.find(b"\n", hit)
        end = len(data) if end == -1 else end
        line = data[start:end].decode("utf-8", errors="replace").removesuffix("\r")
        if start == 0:
            line = line.removeprefix("\ufeff")
        if matches(line):
            count += 1
            if first_only:
                return count
        hit = find(data, end + 1) if end < len(data) else -1
    return count if hit < 0 else None


def _literal_search(options: GrepOptions, body: str) -> tuple[str, str] | None:
    """``(haystack, needle)`` for a fixed string searched without the regex module (linear
    time whatever the needle), or ``None`` where only the regex module is exact.

    Case-insensitive only where the needle and the text are ASCII: there full case folding
    is lowering (beyond ASCII, ``ß`` matches ``ss`` and the Kelvin sign ``k``).
    """
    needle = options.pattern
    if not options.fixed_strings or options.multiline or not needle:
        return None
    if not options.ignore_case:
        return body, needle
    if needle.isascii() and body.isascii():
        return body.lower(), needle.lower()
    return None


def _literal_spans(
    body: str, haystack: str, needle: str, deadline: float, first_only: bool
) -> Iterator[_Span]:
    """Yield the lines holding ``needle``, found with ``str.find`` (linear in the text).

    ``haystack`` is ``body`` or its lowered copy (the same length). A needle holding a line
    break matches no line.
    """
    if "\n" in needle:
        return
    number, line_start = 1, 0
    pos = 0
    while True:
        _time_left(deadline)
        start = haystack.find(needle, pos)
        if start == -1:
            return
        breaks = body.count("\n", line_start, start)
        if breaks:
            number += breaks
            line_start = body.rfind("\n", line_start, start) + 1
        end = body.find("\n", start)
        end = len(body) if end == -1 else end
        yield number, line_start, end, True
        if first_only:
            return
        pos = end + 1


def apply_paging(
    items: Sequence[_T], offset: int = 0, head_limit: int | None = None
) -> tuple[list[_T], bool]:
    """Cut one page out of a result list (the tool layer's ``offset`` / ``head_limit``).

    Args:
        items: All results (file paths, output lines or count lines).
        offset: How many leading items to skip.
        head_limit: The most items to return; ``None`` or ``0`` means no limit.

    Returns:
        The page, and whether any items follow it.

    Raises:
        ValueError: ``offset`` or ``head_limit`` is negative.
    """
    if offset < 0 or (head_limit is not None and head_limit < 0):
        raise ValueError("offset and head_limit must be 0 or more")
    stop = len(items) if not head_limit else min(len(items), offset + head_limit)
    return list(items[offset:stop]), stop < len(items)


def _clip(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    return f"{line[:limit]} … [line clipped: {len(line)} chars]"


def _needs_line_loop(options: GrepOptions) -> bool:
    """Tell whether the pattern may look beyond its line (lexical, conservative)."""
    return not options.fixed_strings and _looks_beyond_line(options.pattern)


@functools.lru_cache(maxsize=64)
def _looks_beyond_line(pattern: str) -> bool:
    """Read once per pattern, not once per file searched."""
    if any(group in pattern for group in _CONTEXT_GROUPS):
        return True
    i = 0
    while i < len(pattern) - 1:
        ch, nxt = pattern[i], pattern[i + 1]
        if ch == "\\":
            if nxt in _CONTEXT_ESCAPES:
                return True
            i += 2
            continue
        if ch in _QUANTIFIER_ENDS and nxt == "+":
            return True
        i += 1
    return False


def _line_matches(line: str, compiled: regex.Pattern[str], deadline: float) -> bool:
    return compiled.search(line, timeout=_time_left(deadline)) is not None


def _fast_spans(
    body: str,
    compiled: regex.Pattern[str],
    deadline: float,
    first_only: bool,
    chunk_chars: int = _CHUNK_CHARS,
) -> Iterator[_Span]:
    """Yield matching lines, searching whole chunks of text and counting newlines.

    ``finditer`` runs over line-aligned chunks of about ``chunk_chars``, each with the time
    left until ``deadline``.
    """
    size = len(body)
    number, line_start = 1, 0  # a line start and its line number, moving forward
    done_until = 0  # the start of the line after the last one reported
    pos = 0  # always a line start
    while pos <= size:
        chunk_end = body.find("\n", pos + chunk_chars)
        chunk_end = size if chunk_end == -1 else chunk_end
        next_pos = chunk_end + 1
        for found in compiled.finditer(body, pos, chunk_end, timeout=_time_left(deadline)):
            start = found.start()
            if start < done_until:
                # A second match on a reported line: skip the rest of the line in one go
                # rather than walk its matches (think of a pattern matching everywhere).
                next_pos = done_until
                break
            breaks = body.count("\n", line_start, start)
            if breaks:
                number += breaks
                line_start = body.rfind("\n", line_start, start) + 1
            end = body.find("\n", start, chunk_end)
            end = chunk_end if end == -1 else end
            crossed = found.end() > end
            # A match across a line break says nothing about line semantics: recheck the
            # line on its own, then search afresh from the next line.
            if not crossed or _line_matches(body[line_start:end], compiled, deadline):
                yield number, line_start, end, True
                if first_only:
                    return
            done_until = end + 1
            if crossed:
                next_pos = done_until
                break
        pos = next_pos


def _line_loop_spans(
    body: str, compiled: regex.Pattern[str], deadline: float, first_only: bool
) -> Iterator[_Span]:
    """Yield matching lines, searching each line on its own (exact, slower)."""
    pos = 0
    for number, line in enumerate(body.split("\n"), start=1):
        end = pos + len(line)
        if _line_matches(line, compiled, deadline):
            yield number, pos, end, True
            if first_only:
                return
        pos = end + 1


def _multiline_spans(
    text: str, size: int, compiled: regex.Pattern[str], deadline: float, first_only: bool
) -> tuple[list[_Span], int]:
    """Return the lines touched by matches over the whole text, and the number of matches.

    ``text`` keeps its final newline (a pattern may match it); ``size`` is the length
    without it, so an empty match after that newline (on no line at all) is not counted.
    """
    spans: list[_Span] = []
    count = 0
    pos = 0
    number = 1  # line number of ``line_start``
    line_start = 0
    last_line = 0  # last line number already in ``spans``
    while pos <= size:
        found = compiled.search(text, pos, timeout=_time_left(deadline))
        if found is None or found.start() > size:
            break
        count += 1
        start, stop = found.span()
        pos = stop if stop > start else stop + 1
        number += text.count("\n", line_start, start)
        line_start = text.rfind("\n", 0, start) + 1
        last_char = max(start, stop - 1)
        while True:  # every line from the match's first to the one holding its last char
            end = text.find("\n", line_start, size)
            end = size if end == -1 else end
            if number > last_line:
                spans.append((number, line_start, end, True))
                last_line = number
            if end >= last_char or end == size:
                break
            line_start = end + 1
            number += 1
        if first_only:
            break
    return spans, count


def _with_context(body: str, matches: list[_Span], before: int, after: int) -> list[_Span]:
    """Merge matching lines with their context lines, in order and without repeats."""
    out: list[_Span] = []
    last = 0  # last line number emitted
    for index, (number, start, end, _) in enumerate(matches):
        ahead: list[_Span] = []
        line_start = start
        for previous in range(number - 1, max(last, number - before - 1), -1):
            line_end = line_start - 1
            line_start = body.rfind("\n", 0, line_end) + 1
            ahead.append((previous, line_start, line_end, False))
        out.extend(reversed(ahead))
        out.append((number, start, end, True))
        limit = number + after
        if index + 1 < len(matches):
            limit = min(limit, matches[index + 1][0] - 1)
        line_end = end
        while number < limit and line_end < len(body):
            line_start = line_end + 1
            line_end = body.find("\n", line_start)
            line_end = len(body) if line_end == -1 else line_end
            number += 1
            out.append((number, line_start, line_end, False))
        last = number
    return out
