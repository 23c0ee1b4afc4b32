"""Typed, frozen results of workspace operations.

:class:`FileInfo` is the storage seam's own type (:mod:`ctxfs.backends._info`): the stores
return it, and the workspace hands it on unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ctxfs.backends._info import FileInfo

__all__ = [
    "EditResult",
    "FileInfo",
    "FileResult",
    "GlobResult",
    "GrepLine",
    "GrepResult",
    "OutputMode",
    "ReadResult",
]

OutputMode = Literal["files_with_matches", "content", "count"]
"""How grep reports: the matching files, their lines, or a count per file."""


@dataclass(frozen=True, slots=True)
class GrepLine:
    """One output line of content mode.

    Attributes:
        line_number: 1-based line number in the file.
        text: The line without its line ending, clipped to ``max_line_chars``.
        is_match: True for a matching line, False for a context line.
        gap_before: True when lines were skipped between the previous returned line of the
            same file and this one while context was requested: print ``--`` before it.
    """

    line_number: int
    text: str
    is_match: bool
    gap_before: bool = False


@dataclass(frozen=True, slots=True)
class FileResult:
    """The outcome of searching one file.

    Attributes:
        path: The virtual path, as given to :func:`search_file`.
        binary: True if the file was skipped as binary (then there are no matches).
        match_count: Matching lines, or matches in multiline mode. In
            ``files_with_matches`` mode the search stops at the first, so this is 0 or 1.
        lines: Content mode only: matching and context lines in file order, each at most
            once.
    """

    path: str
    binary: bool = False
    match_count: int = 0
    lines: tuple[GrepLine, ...] = ()

    @property
    def matched(self) -> bool:
        """True if the file has at least one match."""
        return self.match_count > 0


@dataclass(frozen=True, slots=True)
class ReadResult:
    """A page of a text file, read line by line with bounded memory.

    Attributes:
        path: Virtual path read.
        offset: 0-based index of the first line returned.
        lines: The lines, without their line endings; each clipped to the line limit.
        clipped: Indexes (into ``lines``) of lines shown only in part, with their full
            lengths in characters.
        total_lines: Number of lines in the whole file.
        stopped_by_chars: Whether the page ended early because of the character cap.
        column: The character of the first line the page starts at (0 unless asked).
        carriage_returns: Indexes (into ``lines``) of lines that ended with ``\r`` (before
            their ``\n``, or at the end of the file), which ``lines`` leaves out.
        final_newline: Whether the file ends with ``\n`` (``True`` for an empty file):
            with ``carriage_returns``, what the lines need to be the file's bytes again.
    """

    path: str
    offset: int
    lines: tuple[str, ...]
    clipped: tuple[tuple[int, int], ...]
    total_lines: int
    stopped_by_chars: bool = False
    column: int = 0
    carriage_returns: tuple[int, ...] = ()
    final_newline: bool = True

    @property
    def next_offset(self) -> int | None:
        """Offset of the next unread line, or ``None`` if the page reached the end."""
        end = self.offset + len(self.lines)
        return end if end < self.total_lines else None


@dataclass(frozen=True, slots=True)
class EditResult:
    """Outcome of an exact-replacement edit.

    Attributes:
        path: Virtual path edited.
        replacements: How many occurrences were replaced.
    """

    path: str
    replacements: int


@dataclass(frozen=True, slots=True)
class GlobResult:
    """Paths matched by a glob pattern, sorted.

    Attributes:
        paths: Matching virtual paths, sorted, at most the cap.
        truncated: Whether more paths matched than were returned.
        total: How many paths matched in all (``len(paths)`` unless ``truncated``).
    """

    paths: tuple[str, ...]
    truncated: bool
    total: int


@dataclass(frozen=True, slots=True)
class GrepResult:
    """Everything a grep found, before paging (the tools page it with ``head_limit``).

    Attributes:
        output_mode: The mode searched in; in ``files_with_matches`` each file's search
            stopped at its first match.
        files: Files with at least one match, sorted by path, with their lines in
            ``content`` mode and their counts in ``count`` mode.
        searched: How many files were searched.
        skipped_binary: Files skipped because they are binary (hold NUL bytes).
        skipped_large: Files skipped because they exceed ``Limits.max_grep_file_bytes``.
    """

    output_mode: OutputMode
    files: tuple[FileResult, ...]
    searched: int
    skipped_binary: tuple[str, ...] = ()
    skipped_large: tuple[str, ...] = ()
