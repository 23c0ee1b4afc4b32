"""Size caps and time limits that keep one tool call from flooding the context or hanging."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Limits", "TimeBudget"]


class Limits(BaseModel):
    """Caps applied by the workspace and its tools.

    Attributes:
        max_read_chars: Most characters one ``read_file`` call returns; past it the output
            stops at a line boundary and says which offset to read next.
        max_line_chars: Lines longer than this are clipped in reads and grep output, with a
            marker that gives the full length.
        default_read_lines: Lines returned by ``read_file`` when no limit is given.
        regex_timeout: Seconds of pattern matching one ``grep`` or ``glob`` call may use in
            all, over every file it looks at (time spent listing and reading storage is not
            counted). Past it the call stops with
            :class:`~ctxfs._errors.SearchTimeoutError`.
        search_timeout: Seconds of wall time one ``grep`` or ``glob`` call may take in all:
            listing, reading storage and matching (``regex_timeout`` bounds the matching
            part alone). Past it the call stops with
            :class:`~ctxfs._errors.SearchTimeoutError`.
        max_read_bytes: Most bytes a bounded read of a whole file returns
            (:meth:`ctxfs.Workspace.read_bytes` with ``bounded=True``, what the agent-facing
            integrations use for binary files); past it
            :class:`~ctxfs._errors.FileTooLargeError`, with nothing past the cap read.
        max_glob_results: Most paths ``glob`` returns before it says the list was truncated.
        max_grep_file_bytes: Files larger than this are skipped by ``grep`` (and said so).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_read_chars: int = Field(default=100_000, gt=0)
    max_line_chars: int = Field(default=2_000, gt=0)
    default_read_lines: int = Field(default=2_000, gt=0)
    regex_timeout: float = Field(default=5.0, gt=0)
    search_timeout: float = Field(default=60.0, gt=0)
    max_read_bytes: int = Field(default=16 * 2**20, gt=0)
    max_glob_results: int = Field(default=1_000, gt=0)
    max_grep_file_bytes: int = Field(default=64 * 2**20, gt=0)


class TimeBudget:
    """Seconds of pattern matching one call may spend, shared by all the files it visits.

    A ``grep`` or ``glob`` call makes one from :attr:`Limits.regex_timeout`; each piece of
    matching work runs inside :meth:`spend`, which hands it a deadline and takes the time it
    used off what is left. Work done outside (listing, reading storage) is not counted.

    Example:
        >>> budget = TimeBudget(1.0)
        >>> with budget.spend() as deadline:
        ...     pass  # match, passing ``deadline`` on
        >>> 0.0 < budget.left <= 1.0
        True

    Args:
        seconds: The whole budget.
    """

    def __init__(self, seconds: float) -> None:
        if not seconds > 0:
            raise ValueError("a time budget must be a positive number of seconds")
        self.seconds = seconds
        self._left = seconds

    @property
    def left(self) -> float:
        """Seconds not yet spent (zero or less once the budget is used up)."""
        return self._left

    @contextmanager
    def spend(self) -> Iterator[float]:
        """Run a piece of work; yields its :func:`time.monotonic` deadline."""
        started = time.monotonic()
        try:
            yield started + self._left
        finally:
            self._left -= time.monotonic() - started
