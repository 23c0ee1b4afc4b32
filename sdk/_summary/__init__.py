"""The summary: the last step of a compaction, when the lossless steps cannot free enough.

- :mod:`~ctxfs._summary._step`: the step itself: cut, archive first, then summarize (one
  generator for sync and async callers);
- :mod:`~ctxfs._summary._cut`: where a conversation may be cut (atomic blocks);
- :mod:`~ctxfs._summary._body`: the body, by a chat model or extractively;
- :mod:`~ctxfs._summary._message`: the summary message, its tag and its state.
"""

from ctxfs._summary._message import is_summary

__all__ = ["is_summary"]
