"""The texts the model sees: pure functions from workspace results to tool-result strings.

Nothing here touches storage, so every output can be pinned by a test without a workspace.
"""

from __future__ import annotations

from collections.abc import Sequence

from ctxfs._grep import GrepLine, apply_paging
from ctxfs._results import FileInfo, GlobResult, GrepResult, ReadResult

__all__ = [
    "format_glob",
    "format_grep",
    "format_ls",
    "format_read",
    "plural",
]

MAX_LISTED_SKIPS = 10
"""Skipped files named in a grep note before the rest are only counted."""


def plural(count: int, word: str, many: str | None = None) -> str:
    """``"1 line"``, ``"2 lines"``; ``many`` for irregular plurals."""
    return f"{count} {word}" if count == 1 else f"{count} {many or word + 's'}"


def format_read(result: ReadResult, *, max_read_chars: int) -> str:
    """A page of a file numbered like ``cat -n``, with a note saying how to read on.

    Args:
        result: The page, from :meth:`~ctxfs.Workspace.read_lines`.
        max_read_chars: The character cap that may have ended the page, for the note.

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
                    f"{line} … [line clipped: {full} chars; call read_file with "
                    f"offset={number - 1}, limit=1, column={end} to read on in this line]"
                )
        out.append(f"{number:>6}\t{line}")
    next_offset = result.next_offset
    if next_offset is not None:
        remaining = result.total_lines - next_offset
        why = (
            f" (this page stopped at the {max_read_chars}-character limit)"
            if result.stopped_by_chars
            else ""
        )
        out.append(
            f"... {plural(remaining, 'more line')}{why}; "
            f"call read_file with offset={next_offset} to read on"
        )
    return "\n".join(out)


def format_ls(path: str, entries: Sequence[FileInfo], cap: int) -> str:
    """One path per line, folders ending with ``/``; at most ``cap`` entries."""
    if not entries:
        return f"(directory {path} is empty)"
    out = [f"{e.path}/" if e.is_dir else e.path for e in entries[:cap]]
    if len(entries) > cap:
        out.append(
            f"... {plural(len(entries) - cap, 'more entry', 'more entries')} not shown; "
            "use glob with a pattern to find specific files"
        )
    return "\n".join(out)


def format_glob(result: GlobResult, *, pattern: str, path: str) -> str:
    """One matching file per line, sorted, with a note when the list was capped."""
    if not result.paths:
        return f"No files match {pattern!r} under {path}"
    out = list(result.paths)
    if result.truncated:
        out.append(
            f"... more files match (showing the first {len(result.paths)}); "
            "narrow the pattern or the path to see the rest"
        )
    return "\n".join(out)


def format_grep(
    result: GrepResult,
    *,
    pattern: str,
    path: str,
    head_limit: int,
    offset: int,
    line_numbers: bool = True,
    separators: bool = False,
) -> str:
    """A grep result as rg prints it, one page of ``head_limit`` entries from ``offset``.

    Entries are paths (``files_with_matches``), ``path:count`` lines (``count``) or output
    lines (``content``: ``path:line:text`` for matches, ``path-line-text`` for context, and
    ``--`` between groups that are not adjacent when ``separators`` is set).

    Raises:
        ValueError: ``offset`` is past the last entry.
    """
    unit = "line" if result.output_mode == "content" else "file"
    if result.output_mode == "content":
        lines = [(f.path, line) for f in result.files for line in f.lines]
        line_page, truncated = apply_paging(lines, offset, head_limit)
        total, shown = len(lines), len(line_page)
        body = _content_lines(line_page, line_numbers=line_numbers, separators=separators)
    else:
        file_page, truncated = apply_paging(result.files, offset, head_limit)
        total, shown = len(result.files), len(file_page)
        count_mode = result.output_mode == "count"
        body = [f"{f.path}:{f.match_count}" if count_mode else f.path for f in file_page]
    if total == 0:
        body = [
            f"No matches for {pattern!r} in {path} ({plural(result.searched, 'file')} searched)"
        ]
    elif shown == 0:
        raise ValueError(
            f"offset {offset} is past the end of the results ({plural(total, unit)}); "
            f"use an offset from 0 to {total - 1}"
        )
    out = [*body, *_skip_notes(result)]
    if truncated:
        next_offset = offset + shown
        out.append(
            f"... {plural(total - next_offset, 'more ' + unit)}; "
            f"call grep again with offset={next_offset} to see the next page"
        )
    return "\n".join(out)


def _content_lines(
    page: Sequence[tuple[str, GrepLine]], *, line_numbers: bool, separators: bool
) -> list[str]:
    out: list[str] = []
    previous: str | None = None
    for file_path, line in page:
        if separators and previous is not None and (file_path != previous or line.gap_before):
            out.append("--")
        mark = ":" if line.is_match else "-"
        number = f"{line.line_number}{mark}" if line_numbers else ""
        out.append(f"{file_path}{mark}{number}{line.text}")
        previous = file_path
    return out


def _skip_notes(result: GrepResult) -> list[str]:
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
            f"read {'it' if len(result.skipped_large) == 1 else 'them'} in pages with read_file)"
        )
    return notes


def _names(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:MAX_LISTED_SKIPS])
    rest = len(paths) - MAX_LISTED_SKIPS
    return f"{shown} and {rest} more" if rest > 0 else shown
