"""Names of temporary files: what a writer or a check makes and no listing ever shows.

A local write goes through a temporary file renamed into place; an access check on object
storage writes a probe object and deletes it. Both are named ``.ctxfs-<32 hex digits>.tmp``,
a fixed length (a target's own name may already be at the 255-byte limit), and both stores
leave such names out of ``ls`` and ``walk``, so a write in progress, or one a crash cut
short, is never seen.
"""

from __future__ import annotations

import re
import uuid

__all__ = ["is_temporary_name", "temporary_name"]

_TEMP_NAME = re.compile(r"\.ctxfs-[0-9a-f]{32}\.tmp")


def temporary_name() -> str:
    """A fresh temporary name, unique with overwhelming probability."""
    return f".ctxfs-{uuid.uuid4().hex}.tmp"


def is_temporary_name(name: str) -> bool:
    """Whether a file name (not a path) is one :func:`temporary_name` makes.

    Example:
        >>> is_temporary_name(temporary_name()), is_temporary_name("notes.tmp")
        (True, False)
    """
    return _TEMP_NAME.fullmatch(name) is not None
