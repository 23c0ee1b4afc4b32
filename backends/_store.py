"""The storage seam: the small protocol every workspace store implements.

A :class:`~ctxfs.Workspace` keeps the rules that are the same everywhere (virtual paths,
read-only areas, typed results, glob and grep); a :class:`Store` does the few things that
differ between backends. Two implementations ship, chosen once when a workspace is opened:
:class:`~ctxfs.backends.LocalStore` (a folder on this machine) and
:class:`~ctxfs.backends.FsspecStore` (any fsspec filesystem: memory, S3, ...).

The contract, which :mod:`ctxfs.testing.conformance` checks through a Workspace:

- **Paths** are virtual POSIX paths, already normalised by the sandbox: rooted at ``/``, no
  ``.``/``..`` segments, no trailing ``/``. The store maps them onto its own root.
- **Confinement.** :meth:`Store.real_path` says where a path really leads once links are
  followed, and raises :class:`~ctxfs._errors.UnsafePathError` if that is outside the root.
  The Workspace asks it for every path it is given, before any other method; the other
  methods trust their path. :meth:`Store.ls` and :meth:`Store.walk` never list an entry that
  leads outside, nor one that is neither a regular file nor a folder.
- **Errors** are ctxfs errors, translated inside the store (:mod:`ctxfs.backends._errors`):
  :class:`~ctxfs._errors.PathNotFoundError` only when the storage answered "not there",
  :class:`~ctxfs._errors.BackendError` when it could not be asked (network, permission,
  server). "Not found" and "could not ask" are never confused.
- **Conditional writes.** :meth:`Store.read_versioned` and ``write(..., if_version=...)``
  are a compare-and-swap: of two writers that read the same version, one writes and the
  other gets :class:`~ctxfs._errors.ConflictError`, so neither loses the other's change.
- **The root** may not exist yet on object stores; the Workspace treats ``/`` as an existing,
  possibly empty folder itself, so a store need not special-case it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import BinaryIO, Protocol, runtime_checkable

from ctxfs.backends._info import FileInfo

__all__ = ["Store"]


@runtime_checkable
class Store(Protocol):
    """Where a workspace's bytes live. Every path is a normalised virtual path.

    Attributes:
        url: Where the store lives, for display (``s3://bucket/prefix``, a local folder...).
    """

    @property
    def url(self) -> str:
        """Where the store lives, for display."""
        ...

    def local_path(self, path: str) -> str | None:
        """The path on this machine's disk where ``path`` lives, or ``None`` if it has none.

        For display only (e.g. "look around with ``ls -R``"); nothing reads through it.
        """
        ...

    def real_path(self, path: str) -> str:
        """The virtual path that ``path`` really is once symbolic links are followed.

        Stores without links answer ``path`` itself.

        Raises:
            UnsafePathError: A link on the way leads outside the root.
        """
        ...

    def info(self, path: str) -> FileInfo:
        """Metadata of one path (a link is described by its target).

        Raises:
            PathNotFoundError: Nothing is there.
            NotADirectoryPathError: A file stands where a folder on the way should be
                (stores may also answer :class:`~ctxfs._errors.PathNotFoundError`).
        """
        ...

    def ls(self, path: str) -> list[FileInfo]:
        """The direct children of folder ``path``, in any order.

        Raises:
            PathNotFoundError: The folder does not exist.
            NotADirectoryPathError: ``path`` is a file (or lies below one).
        """
        ...

    def walk(self, path: str) -> Iterator[FileInfo]:
        """Every file below folder ``path``, at any depth, in any order; no folders.

        Links to folders are not followed (they could form cycles); links to files that
        stay inside the root are listed under their own path. A folder that does not exist
        yields nothing; one that cannot be listed raises
        :class:`~ctxfs._errors.BackendError`, so no file silently goes missing.
        """
        ...

    def open_read(self, path: str) -> AbstractContextManager[BinaryIO]:
        """A binary stream over file ``path`` for paged reads, with bounded read-ahead.

        Errors raised while the stream is read inside the ``with`` block are translated too.
        """
        ...

    def read_bytes(self, path: str) -> bytes:
        """The whole content of file ``path``."""
        ...

    def fetch(self, files: Iterable[FileInfo]) -> Iterator[tuple[FileInfo, bytes]]:
        """The content of many files, in the order given, for search.

        Files that vanished since they were listed are skipped. Remote stores read in
        concurrent batches, bounded by file count and by bytes in flight (taken from each
        :attr:`FileInfo.size`).
        """
        ...

    def read_versioned(self, path: str) -> tuple[bytes, str]:
        """The whole content of file ``path`` and a version token for exactly that content.

        The token is opaque (a content hash on local disk and in memory, the ETag on S3);
        give it back as ``if_version`` to :meth:`write` to write only if the file still
        holds what was read.

        Raises:
            PathNotFoundError: Nothing is there.
        """
        ...

    def write(
        self,
        path: str,
        data: bytes,
        *,
        create_only: bool = False,
        if_version: str | None = None,
    ) -> None:
        """Write a whole file, creating missing parent folders.

        A reader sees the old content or the new one, never a mix (local disk: a temporary
        file renamed into place; object stores: one whole-object PUT).

        Args:
            path: The file.
            data: Its content.
            create_only: Raise :class:`~ctxfs._errors.PathExistsError` if the file exists:
                atomically where the backend can (a hard link on local disk, a conditional
                PUT on S3, a lock shared by the users of one filesystem object), otherwise
                by a check just before the write.
            if_version: Write only if the file still has this version (from
                :meth:`read_versioned`), atomically: a lock around the check and the rename
                on local disk, a conditional PUT (``If-Match``) on S3, a lock in memory.
                Otherwise raise :class:`~ctxfs._errors.ConflictError` and write nothing;
                a file deleted since it was read is a conflict too.
        """
        ...

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Delete a file or link, or with ``recursive`` a folder and everything below it.

        Raises:
            PathNotFoundError: Nothing is there.
            IsADirectoryPathError: A folder without ``recursive``.
        """
        ...
