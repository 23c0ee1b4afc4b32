"""A store that records every call it forwards: to assert what a workspace asked its storage.

Example:
    >>> from ctxfs import Workspace
    >>> from ctxfs.testing import RecordingStore
    >>> store = RecordingStore(Workspace("memory://recorded").store)
    >>> workspace = Workspace(store)
    >>> workspace.write_text("/notes.md", "hello")
    FileInfo(path='/notes.md', type='file', size=5)
    >>> store.calls[-1]
    StoreCall(method='write', path='/notes.md')
    >>> store.clear()
    >>> workspace.grep("hello").files[0].path
    '/notes.md'
    >>> store.methods()
    ['real_path', 'walk', 'fetch']
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import BinaryIO, NamedTuple

from ctxfs._workspace._results import FileInfo
from ctxfs.backends import Store

__all__ = ["RecordingStore", "StoreCall"]


class StoreCall(NamedTuple):
    """One call a :class:`RecordingStore` forwarded.

    Attributes:
        method: The :class:`~ctxfs.backends.Store` method, e.g. ``"read_bytes"``.
        path: The virtual path it was called with (one call per file for ``fetch``).
    """

    method: str
    path: str


class RecordingStore:
    """Wraps a :class:`~ctxfs.backends.Store`, records each call, and forwards it.

    Open a :class:`~ctxfs.Workspace` on it to see which storage calls an operation makes:
    how many round trips a grep costs, that a read never lists, that an operation refused
    by the sandbox never reached the storage.

    Args:
        inner: The store that does the work.

    Attributes:
        inner: The wrapped store.
        calls: Every call so far, oldest first. ``fetch`` records one call per file it is
            asked for, when it is asked.
    """

    def __init__(self, inner: Store) -> None:
        self.inner = inner
        self.calls: list[StoreCall] = []

    def _record(self, method: str, path: str) -> None:
        self.calls.append(StoreCall(method, path))

    def clear(self) -> None:
        """Forget the calls recorded so far."""
        self.calls.clear()

    def methods(self) -> list[str]:
        """The method of each recorded call, in order."""
        return [call.method for call in self.calls]

    @property
    def url(self) -> str:
        """The inner store's display location."""
        return self.inner.url

    def __repr__(self) -> str:
        return f"RecordingStore({self.inner!r})"

    def local_path(self, path: str) -> str | None:
        """Forwarded (and recorded)."""
        self._record("local_path", path)
        return self.inner.local_path(path)

    def real_path(self, path: str) -> str:
        """Forwarded (and recorded)."""
        self._record("real_path", path)
        return self.inner.real_path(path)

    def info(self, path: str) -> FileInfo:
        """Forwarded (and recorded)."""
        self._record("info", path)
        return self.inner.info(path)

    def ls(self, path: str) -> list[FileInfo]:
        """Forwarded (and recorded)."""
        self._record("ls", path)
        return self.inner.ls(path)

    def walk(self, path: str) -> Iterator[FileInfo]:
        """Forwarded (and recorded)."""
        self._record("walk", path)
        return self.inner.walk(path)

    def open_read(self, path: str) -> AbstractContextManager[BinaryIO]:
        """Forwarded (and recorded)."""
        self._record("open_read", path)
        return self.inner.open_read(path)

    def read_bytes(self, path: str) -> bytes:
        """Forwarded (and recorded)."""
        self._record("read_bytes", path)
        return self.inner.read_bytes(path)

    def fetch(self, files: Iterable[FileInfo]) -> Iterator[tuple[FileInfo, bytes]]:
        """Forwarded (and recorded, one call per file)."""
        wanted = list(files)
        for info in wanted:
            self._record("fetch", info.path)
        return self.inner.fetch(wanted)

    def read_versioned(self, path: str) -> tuple[bytes, str]:
        """Forwarded (and recorded)."""
        self._record("read_versioned", path)
        return self.inner.read_versioned(path)

    def write(
        self,
        path: str,
        data: bytes,
        *,
        create_only: bool = False,
        if_version: str | None = None,
    ) -> None:
        """Forwarded (and recorded)."""
        self._record("write", path)
        self.inner.write(path, data, create_only=create_only, if_version=if_version)

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Forwarded (and recorded)."""
        self._record("remove", path)
        self.inner.remove(path, recursive=recursive)
