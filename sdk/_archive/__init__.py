"""The transcript archive: every message a summary drops, kept byte-exact, append-only.

- :mod:`~ctxfs._archive._transcripts`: :class:`TranscriptArchive` and its segments.
"""

from ctxfs._archive._transcripts import ArchiveSegment, TranscriptArchive

__all__ = ["ArchiveSegment", "TranscriptArchive"]
