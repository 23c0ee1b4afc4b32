"""Storage backends: open a workspace URL as an fsspec filesystem, translate its errors.

ctxfs stores everything through fsspec, so any filesystem fsspec reaches works. This package
knows the few things that differ between them: how to open a URL without sharing state
between workspaces, and how to turn each backend's exceptions into ctxfs's error tree.
"""

from __future__ import annotations

from ctxfs.backends.errors import translate_errors
from ctxfs.backends.factory import Storage, open_storage

__all__ = ["Storage", "open_storage", "translate_errors"]
