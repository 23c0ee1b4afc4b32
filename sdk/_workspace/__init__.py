"""The workspace: virtual, confined file access on any storage, and everything it answers.

- :mod:`~ctxfs._workspace._workspace`: :class:`Workspace` (ls, info, read, write, edit,
  glob, grep), over one :class:`~ctxfs.backends.Store`;
- :mod:`~ctxfs._workspace._results`: the typed, frozen results it returns (``FileInfo`` is
  the storage seam's, re-exported);
- :mod:`~ctxfs._workspace._writes`: where a view may write (its read-only areas), the checks
  before a write, updates with no lost change, edits;
- :mod:`~ctxfs._workspace._find`: glob and grep driven over a store, under one time budget;
- :mod:`~ctxfs._workspace._literals`: what a pattern says about its literals (prefilter, guard),
  and :mod:`~ctxfs._workspace._prefilter`: the byte tests that rule a file out undecoded;
- :mod:`~ctxfs._workspace._glob` (with :mod:`~ctxfs._workspace._automaton`) and
  :mod:`~ctxfs._workspace._grep`: matching, the same on every backend;
- :mod:`~ctxfs._workspace._textread`: a page of lines from a stream, with bounded memory;
- :mod:`~ctxfs._workspace._saving`: create-only saves read back before anyone relies on them;
- :mod:`~ctxfs._workspace._quote`: quoting a caller's input in a message without a flood.
"""

from ctxfs._workspace._results import EditResult, FileInfo, GlobResult, GrepResult, ReadResult
from ctxfs._workspace._workspace import Workspace

__all__ = ["EditResult", "FileInfo", "GlobResult", "GrepResult", "ReadResult", "Workspace"]
