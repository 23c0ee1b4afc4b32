"""Storage backends: the :class:`Store` seam, its two implementations, and error translation.

A workspace reaches its bytes through a :class:`Store`: a small protocol (info, ls, walk,
ranged read, batched fetch, atomic / create-only write, remove, and the link check that
confinement needs). :func:`open_storage` picks the implementation once, when a workspace is
opened: :class:`LocalStore` for a folder on this machine, :class:`FsspecStore` for any fsspec
filesystem (memory, S3, ...); :func:`check_store` then asks it once whether it can be used.
Backend differences and the translation of backend exceptions into ctxfs's error tree
(:mod:`ctxfs.backends._errors`) live here and nowhere else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ctxfs.backends._check import check_store
from ctxfs.backends._errors import translate_error, translate_errors
from ctxfs.backends._factory import local_folder_of, open_storage, protocol_of
from ctxfs.backends._guard import GuardedStore, guard_store
from ctxfs.backends._info import FileInfo
from ctxfs.backends._local import LocalStore
from ctxfs.backends._store import Store

if TYPE_CHECKING:
    from ctxfs.backends._fsspec import FsspecStore

__all__ = [
    "FileInfo",
    "FsspecStore",
    "GuardedStore",
    "LocalStore",
    "Store",
    "check_store",
    "guard_store",
    "local_folder_of",
    "open_storage",
    "protocol_of",
    "translate_error",
    "translate_errors",
]


def __getattr__(name: str) -> object:
    """``FsspecStore`` loads fsspec, so it is imported on first use: a local folder needs
    neither (``ctxfs ls ./ws`` starts without them)."""
    if name == "FsspecStore":
        from ctxfs.backends._fsspec import FsspecStore

        return FsspecStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
