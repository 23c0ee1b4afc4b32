"""The transcript archive: every message a summary drops, kept byte-exact, append-only.

- :mod:`~ctxfs._archive._codec`: the formats (lossless JSONL, the readable Markdown twin).
- :mod:`~ctxfs._archive._segment`: a segment's entry, the thread's folder and its storage
  calls.
- :mod:`~ctxfs._archive._branches`: the tree the segments make by their parents.
- :mod:`~ctxfs._archive._index`: the paged index, a cache rebuilt from the records.
- :mod:`~ctxfs._archive._transcripts`: :class:`TranscriptArchive`, which writes and reads
  them.
"""

from ctxfs._archive._branches import TranscriptBranch
from ctxfs._archive._segment import ArchiveSegment
from ctxfs._archive._transcripts import TranscriptArchive

__all__ = ["ArchiveSegment", "TranscriptArchive", "TranscriptBranch"]
