"""Version tokens for conditional writes where the storage has none of its own.

Local disk and filesystems without ETags version a file by its content: two reads of the
same bytes give the same token, so a compare-and-swap compares content.
"""

from __future__ import annotations

import hashlib

__all__ = ["content_version"]


def content_version(data: bytes) -> str:
    """The version token of content ``data``: its SHA-256, hex."""
    return hashlib.sha256(data).hexdigest()
