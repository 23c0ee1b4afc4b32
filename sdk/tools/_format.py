"""The texts the model sees: pure functions from workspace results to tool-result strings.

Nothing here touches storage, so every output can be pinned by a test without a workspace.
Given an :class:`~ctxfs.tools._budget.OutputBudget`, each output is cut to fit it at a line
or entry boundary, and its last line says how to see the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace

from ctxfs._workspace._quote import UNUSABLE_NAME, quote, shown_path, usable_path
from ctxfs._workspace._results import (
    FileInfo,
    FileResult,
    GlobResult,
    GrepLine,
    GrepResult,
    ReadResult,
)
from ctxfs.tools._budget import OutputBudget
from ctxfs.tools._names import DEFAULT_NAMES, ToolNames

__all__ = [
    "format_glob",
    "format_grep",
    "format_ls",
    "format_read",
    "plural",
]

_Notes = Callable[[int], list[str]]

MAX_LISTED_SKIPS = 10
"""Skipped files named in a grep note before the rest are only counted."""


def plural(count: int, word: str, many: str | None = None) -> str:
    """``"1 line"``, ``"2 lines"``; ``many`` for irregular plurals."""
    return f"{count} {word}" if count == 1 else f"{count} {many or word + 's'}"


def _limit_note(budget: OutputBudget | None) -> str:
    # Only a budget cuts a page short of its entries, so it is there whenever this is said.
    return f"the {budget.max_tokens}-token output limit" if budget else "the output limit"


# -- read_file --------------------------------------------------------------------------------


def format_read(
    result: ReadResult,
    *,
    max_read_chars: int,
    budget: OutputBudget | None = None,
    names: ToolNames = DEFAULT_NAMES,
) -> str:
    """A page of a file numbered like ``cat -n``, with a note saying how to read on.

    Args:
        result: The page, from :meth:`~ctxfs.Workspace.read_lines`.
        max_read_chars: The character cap that may have ended the page, for the note.
        budget: The token budget of the output; the page is cut to fit it (if its first
            line alone is too long, the line is shown in part, with the column to read on).
        names: The tool names the notes send the model to.

    Raises:
        ValueError: The page starts past the end of a non-empty file.
    """
    if result.total_lines == 0:
        return f"(file {result.path} is empty: 0 lines)"
    if not result.lines:
        raise ValueError(
            f"offset {result.offset} is past the end of {result.path}, which has "
            f"{plural(result.total_lines, 'line')}; use an offset from 0 to "
            f"{result.total_lines - 1}"
        )
    entries = _read_entries(result, names)

    def notes(shown: int) -> list[str]:
        return _read_notes(result, shown, max_read_chars, budget, names)

    if budget is None:
        return "\n".join([*entries, *notes(len(entries))])
    shown, text = budget.fit(entries, notes)
    if shown == 0:
        return _read_part_of_first_line(result, max_read_chars, budget, names)
    return text


def _read_entries(result: ReadResult, names: ToolNames) -> list[str]:
    clipped = dict(result.clipped)
    out: list[str] = []
    for index, line in enumerate(result.lines):
        number = result.offset + index + 1
        start = result.column if index == 0 else 0
        if index in clipped:
            full = clipped[index]
            end = start + len(line)
            if start >= full:
                line = f"[this line has only {full} characters; column {start} is past its end]"
            elif start:
                line = f"[from character {start}] {line}"
            if end < full:
                line = (
                    f"{line} … [line clipped: {full} chars; call {names.read_file} with "
                    f"offset={number - 1}, limit=1, column={end} to read on in this line]"
                )
        out.append(f"{number:>6}\t{line}")
    return out


def _read_notes(
    result: ReadResult,
    shown: int,
    max_read_chars: int,
    budget: OutputBudget | None,
    names: ToolNames,
) -> list[str]:
    next_offset = result.offset + shown
    endings = _endings_note(result, shown)
    if shown < len(result.lines):
        why = f" (this page stopped at {_limit_note(budget)})"
    elif result.next_offset is None:
        return endings
    elif result.stopped_by_chars:
        why = f" (this page stopped at the {max_read_chars}-character limit)"
    else:
        why = ""
    remaining = result.total_lines - next_offset
    return [
        *endings,
        f"... {plural(remaining, 'more line')}{why}; "
        f"call {names.read_file} with offset={next_offset} to read on",
    ]


_MOST_RUNS = 20
"""Most runs of line numbers a note lists (``3-9, 12``)."""


def _runs(numbers: list[int]) -> list[str]:
    """Ascending numbers as runs: ``[1, 2, 3, 7]`` -> ``["1-3", "7"]``."""
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return [str(a) if a == b else f"{a}-{b}" for a, b in runs]


def _endings_note(result: ReadResult, shown: int) -> list[str]:
    """What the numbered lines do not show of the bytes: a ``\r`` that ended a line (before
    its ``\n``, or at the end of the file), and a last line with no ``\n``, so that what
    the pages show can be written back byte for byte."""
    notes = []
    # a line shown in part has not reached its end: its ending is for the page that does
    clipped = dict(result.clipped)
    ends = [i for i in range(shown) if i not in clipped or _reaches_end(result, i, clipped[i])]
    numbers = [result.offset + i + 1 for i in result.carriage_returns if i in ends]
    if numbers:
        runs = _runs(numbers)
        if len(numbers) == shown:
            which = "every line shown"
        elif len(runs) <= _MOST_RUNS:
            one = len(numbers) == 1
            which = f"{'line' if one else 'lines'} {', '.join(runs)}"
        else:
            which = f"{len(numbers)} of the lines shown (read fewer lines at a time to see which)"
        notes.append(f"[{which} ended with \\r, which is not shown]")
    last = result.total_lines - 1 - result.offset
    if last in ends and not result.final_newline:
        notes.append("[no newline at the end of the file]")
    return notes


def _reaches_end(result: ReadResult, index: int, full: int) -> bool:
    """Whether line ``index`` of the page, clipped, is shown up to its last character."""
    start = result.column if index == 0 else 0
    return start + len(result.lines[index]) >= full


def _read_part_of_first_line(
    result: ReadResult, max_read_chars: int, budget: OutputBudget, names: ToolNames
) -> str:
    """The page's first line alone is over the budget: show as much of it as fits."""
    line = result.lines[0]
    full = dict(result.clipped).get(0, result.column + len(line))

    def render(piece: str) -> str:
        part = replace(result, lines=(piece,), clipped=((0, full),))
        notes = _read_notes(part, 1, max_read_chars, budget, names)
        return "\n".join([*_read_entries(part, names), *notes])

    piece = budget.longest_prefix(line, render)
    return budget.clip(render(line[:1] if piece is None else piece))


# -- ls and glob ------------------------------------------------------------------------------


def format_ls(
    path: str,
    entries: Sequence[FileInfo],
    cap: int,
    budget: OutputBudget | None = None,
    names: ToolNames = DEFAULT_NAMES,
    offset: int = 0,
) -> str:
    """One path per line, folders ending with ``/``, one page from ``offset``: at most
    ``cap`` entries, and at most what fits the ``budget``; the last line then gives the
    ``offset`` of the next page.

    Raises:
        ValueError: ``offset`` is negative, or past the end of a non-empty listing.
    """
    if not entries:
        return f"(directory {path} is empty)"
    _check_offset(offset, len(entries), "entry", "entries")
    lines = [_listed(e.path, "/" if e.is_dir else "") for e in entries[offset : offset + cap]]

    def notes(shown: int) -> list[str]:
        return _page_notes(
            offset,
            shown,
            len(entries),
            ("more entry", "more entries"),
            cut=f" (this page stopped at {_limit_note(budget)})" if shown < len(lines) else "",
            again=f"call {names.ls} again with offset={offset + shown} to see the next page",
            narrow=f"list a subfolder or use {names.glob} with a pattern to find specific files",
        )

    return _fit(lines, notes, budget)


def format_glob(
    result: GlobResult,
    *,
    pattern: str,
    path: str,
    budget: OutputBudget | None = None,
    names: ToolNames = DEFAULT_NAMES,
    offset: int = 0,
) -> str:
    """One matching file per line, sorted, one page from ``offset`` (``result.paths`` are
    the matches from the first on); the last line then gives the ``offset`` of the next page.

    Raises:
        ValueError: ``offset`` is negative, or past the end of the matches.
    """
    if not result.paths and not offset:
        return f"No files match {quote(pattern)} under {path}"
    _check_offset(offset, result.total, "match", "matches")
    page = [_listed(p) for p in result.paths[offset:]]

    def notes(shown: int) -> list[str]:
        return _page_notes(
            offset,
            shown,
            result.total,
            ("more file matches", "more files match"),
            cut=f" (this page stopped at {_limit_note(budget)})" if shown < len(page) else "",
            again=f"call {names.glob} again with offset={offset + shown} to see the next page",
            narrow="narrow the pattern or the path",
        )

    return _fit(page, notes, budget)


def _listed(path: str, end: str = "") -> str:
    """A listed path: as it is, or escaped and marked when no tool can open it."""
    if usable_path(path):
        return path + end
    return shown_path(path) + end + UNUSABLE_NAME


def _check_offset(offset: int, total: int, one: str, many: str) -> None:
    if offset < 0:
        raise ValueError("offset must be 0 or more")
    if offset and offset >= total:
        raise ValueError(
            f"offset {offset} is past the end ({plural(total, one, many)}); "
            f"use an offset from 0 to {total - 1}"
        )


def _page_notes(
    offset: int,
    shown: int,
    total: int,
    words: tuple[str, str],
    *,
    cut: str,
    again: str,
    narrow: str,
) -> list[str]:
    """The note after a page of ``shown`` entries from ``offset``: how many are left and how
    to see them (nothing when the page reached the end)."""
    left = total - offset - shown
    if left <= 0:
        return []
    return [f"... {plural(left, *words)}{cut}; {again}, or {narrow}"]


def _fit(entries: list[str], notes: _Notes, budget: OutputBudget | None) -> str:
    if budget is None:
        return "\n".join([*entries, *notes(len(entries))])
    shown, text = budget.fit(entries, notes)
    if shown == 0 and entries:
        return _first_entry_in_part(entries[0], notes, budget)
    return text


def _first_entry_in_part(entry: str, notes: _Notes, budget: OutputBudget) -> str:
    """An entry too long for the budget on its own, cut short with a marker."""
    marker = f" … [cut short to fit {_limit_note(budget)}]"

    def render(piece: str) -> str:
        return "\n".join([piece + marker, *notes(1)])

    piece = budget.longest_prefix(entry, render)
    return budget.clip(render(entry[:1] if piece is None else piece))


# -- grep -------------------------------------------------------------------------------------


def format_grep(
    result: GrepResult,
    *,
    pattern: str,
    path: str,
    head_limit: int,
    offset: int,
    line_numbers: bool = True,
    separators: bool = False,
    budget: OutputBudget | None = None,
    names: ToolNames = DEFAULT_NAMES,
) -> str:
    """A grep result as rg prints it, one page from ``offset``.

    Entries are paths (``files_with_matches``), ``path:count`` lines (``count``) or output
    lines (``content``: ``path:line:text`` for matches, ``path-line-text`` for context, and
    ``--`` between groups that are not adjacent when ``separators`` is set). A page holds at
    most ``head_limit`` entries (``0``: no entry limit) and, with a ``budget``, at most what
    fits it; the last line then says which ``offset`` to ask for next.

    Raises:
        ValueError: ``offset`` is past the last entry, or negative, or ``head_limit`` is.
    """
    if offset < 0 or head_limit < 0:
        raise ValueError("offset and head_limit must be 0 or more")
    content = result.output_mode == "content"
    unit = "line" if content else "file"
    total = sum(len(f.lines) for f in result.files) if content else len(result.files)
    if total == 0:
        return "\n".join(
            [
                f"No matches for {quote(pattern)} in {path} "
                f"({plural(result.searched, 'file')} searched)",
                *_skip_notes(result, names),
            ]
        )
    if offset >= total:
        raise ValueError(
            f"offset {offset} is past the end of the results ({plural(total, unit)}); "
            f"use an offset from 0 to {total - 1}"
        )
    page_size = min(total - offset, head_limit or total)
    if content:
        entries = _content_entries(result.files, offset, page_size, line_numbers, separators)
    else:
        entries = _file_entries(result, offset, page_size)
    skips = _skip_notes(result, names)

    def notes(shown: int) -> list[str]:
        next_offset = offset + shown
        if next_offset >= total:
            return skips
        left = plural(total - next_offset, "more " + unit)
        if shown < page_size:
            return [
                *skips,
                f"... {left} (this page stopped at {_limit_note(budget)}); call {names.grep} again "
                f"with offset={next_offset} to see the next page, or narrow the search with "
                "path or glob",
            ]
        return [
            *skips,
            f"... {left}; call {names.grep} again with offset={next_offset} to see the next page",
        ]

    if budget is None:
        return "\n".join([*entries, *notes(page_size)])
    shown, text = budget.fit(entries, notes)
    if shown == 0:
        if content:
            first = _content_entries(result.files, offset, 1, line_numbers, separators=False)
        else:
            first = _file_entries(result, offset, 1)
        return _first_entry_in_part(next(first), notes, budget)
    return text


def _file_entries(result: GrepResult, offset: int, count: int) -> Iterator[str]:
    count_mode = result.output_mode == "count"
    for f in result.files[offset : offset + count]:
        yield f"{shown_path(f.path)}:{f.match_count}" if count_mode else _listed(f.path)


def _content_entries(
    files: Sequence[FileResult], offset: int, count: int, line_numbers: bool, separators: bool
) -> Iterator[str]:
    """Output lines ``offset .. offset+count`` (a ``--`` line joins the entry it precedes)."""
    skip, left = offset, count
    previous: str | None = None
    for f in files:
        if skip >= len(f.lines):
            skip -= len(f.lines)
            continue
        for line in f.lines[skip:]:
            if left == 0:
                return
            gap = previous is not None and (f.path != previous or line.gap_before)
            text = _content_line(f.path, line, line_numbers)
            yield f"--\n{text}" if separators and gap else text
            previous = f.path
            left -= 1
        skip = 0


def _content_line(file_path: str, line: GrepLine, line_numbers: bool) -> str:
    mark = ":" if line.is_match else "-"
    number = f"{line.line_number}{mark}" if line_numbers else ""
    return f"{shown_path(file_path)}{mark}{number}{line.text}"


def _skip_notes(result: GrepResult, names: ToolNames) -> list[str]:
    notes = []
    if result.skipped_binary:
        notes.append(
            f"(skipped {plural(len(result.skipped_binary), 'binary file')}: "
            f"{_names(result.skipped_binary)})"
        )
    if result.skipped_large:
        notes.append(
            f"(skipped {plural(len(result.skipped_large), 'file')} too large to search: "
            f"{_names(result.skipped_large)}; "
            f"read {'it' if len(result.skipped_large) == 1 else 'them'} in pages with "
            f"{names.read_file})"
        )
    return notes


def _names(paths: Sequence[str]) -> str:
    shown = ", ".join(map(shown_path, paths[:MAX_LISTED_SKIPS]))
    rest = len(paths) - MAX_LISTED_SKIPS
    return f"{shown} and {rest} more" if rest > 0 else shown
