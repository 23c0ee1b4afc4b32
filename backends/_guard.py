"""The error half of the store contract, kept for a store that does not keep it.

Every :class:`~ctxfs.backends.Store` raises ctxfs errors only (see :mod:`ctxfs.backends._store`):
the two that ship translate inside. A store of your own, or a wrapper around one (a test's
recording or failing store), may let a raw ``OSError`` through: a disk that fills up, a
socket that drops. :func:`guard_store` wraps such a store so that the error is translated
where it leaves the store (:func:`~ctxfs.backends.translate_error`: a ``FileNotFoundError``
is :class:`~ctxfs._errors.PathNotFoundError`, a failure :class:`~ctxfs._errors.BackendError`),
and everything above (the workspace, the engine, memory, workflows, the collector) handles
one error tree. Only ``OSError`` is translated: any other exception is a defect of the store
and stays what it is, and an exception that is not an error (the process being stopped)
passes untouched.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import BinaryIO, TypeVar

from ctxfs._errors import WorkspaceError
from ctxfs.backends._errors import translate_error
from ctxfs.backends._info import FileInfo
from ctxfs.backends._local import LocalStore
from ctxfs.backends._store import Store

__all__ = ["GuardedStore", "guard_store"]

_T = TypeVar("_T")


def guard_store(store: Store) -> Store:
    """``store`` itself if it ships with ctxfs (it translates its own errors), else a
    :class:`GuardedStore` around it."""
    shipped: tuple[type, ...] = (LocalStore, GuardedStore)
    fsspec_store = sys.modules.get("ctxfs.backends._fsspec")  # loaded if store is one
    if fsspec_store is not None:
        shipped += (fsspec_store.FsspecStore,)
    return store if type(store) in shipped else GuardedStore(store)


@contextmanager
def _translated(path: str) -> Iterator[None]:
    """A raw ``OSError`` from the block as the ctxfs error about ``path``."""
    try:
        yield
    except WorkspaceError:
        raise
    except OSError as exc:
        raise translate_error(exc, path) from exc


def _iterate(items: Iterable[_T], path: str) -> Iterator[_T]:
    with _translated(path):
        yield from items


class GuardedStore:
    """Forwards every call to ``inner``; a raw ``OSError`` it raises becomes a ctxfs error.

    Args:
        inner: The store that does the work.
    """

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    @property
    def url(self) -> str:
        """The inner store's display location."""
        return self.inner.url

    def __repr__(self) -> str:
        return f"GuardedStore({self.inner!r})"

    def local_path(self, path: str) -> str | None:
        """Forwarded."""
        with _translated(path):
            return self.inner.local_path(path)

    def real_path(self, path: str) -> str:
        """Forwarded."""
        with _translated(path):
            return self.inner.real_path(path)

    def info(self, path: str) -> FileInfo:
        """Forwarded."""
        with _translated(path):
            return self.inner.info(path)

    def ls(self, path: str) -> list[FileInfo]:
        """Forwarded."""
        with _translated(path):
            return self.inner.ls(path)

    def walk(self, path: str) -> Iterator[FileInfo]:
        """Forwarded (the listing as it is read, too)."""
        with _translated(path):
            return _iterate(self.inner.walk(path), path)

    def open_read(self, path: str) -> AbstractContextManager[BinaryIO]:
        """Forwarded (the reads inside the ``with`` block, too)."""
        return self._open_read(path)

    @contextmanager
    def _open_read(self, path: str) -> Iterator[BinaryIO]:
        with _translated(path), self.inner.open_read(path) as stream:
            yield stream

    def read_bytes(self, path: str) -> bytes:
        """Forwarded."""
        with _translated(path):
            return self.inner.read_bytes(path)

    def fetch(self, files: Iterable[FileInfo]) -> Iterator[tuple[FileInfo, bytes]]:
        """Forwarded (the contents as they are read, too)."""
        wanted = list(files)
        where = wanted[0].path if wanted else "/"
        with _translated(where):
            return _iterate(self.inner.fetch(wanted), where)

    def read_versioned(self, path: str) -> tuple[bytes, str]:
        """Forwarded."""
        with _translated(path):
            return self.inner.read_versioned(path)

    def write(
        self,
        path: str,
        data: bytes,
        *,
        create_only: bool = False,
        if_version: str | None = None,
    ) -> None:
        """Forwarded (without ``if_version`` when it is ``None``: a store written before
        conditional writes still works)."""
        with _translated(path):
            if if_version is None:
                self.inner.write(path, data, create_only=create_only)
            else:
                self.inner.write(path, data, if_version=if_version)

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Forwarded."""
        with _translated(path):
            self.inner.remove(path, recursive=recursive)
