"""Size caps and time limits that keep one tool call from flooding the context or hanging."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Limits"]


class Limits(BaseModel):
    """Caps applied by the workspace and its tools.

    Attributes:
        max_read_chars: Most characters one ``read_file`` call returns; past it the output
            stops at a line boundary and says which offset to read next.
        max_line_chars: Lines longer than this are clipped in reads and grep output, with a
            marker that gives the full length.
        default_read_lines: Lines returned by ``read_file`` when no limit is given.
        regex_timeout: Seconds any single regular-expression search may run.
        max_glob_results: Most paths ``glob`` returns before it says the list was truncated.
        max_grep_file_bytes: Files larger than this are skipped by ``grep`` (and said so).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_read_chars: int = Field(default=100_000, gt=0)
    max_line_chars: int = Field(default=2_000, gt=0)
    default_read_lines: int = Field(default=2_000, gt=0)
    regex_timeout: float = Field(default=1.0, gt=0)
    max_glob_results: int = Field(default=1_000, gt=0)
    max_grep_file_bytes: int = Field(default=64 * 2**20, gt=0)
