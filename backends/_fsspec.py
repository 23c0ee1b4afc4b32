"""Any fsspec filesystem (memory, S3, GCS, ...) as a workspace store.

Object stores have no links, no rename and no real folders, so this store is mostly a thin
mapping from virtual paths onto ``root`` inside the filesystem. What it adds:

- **Create-only writes** use S3's conditional PUT (``If-None-Match: *``, through
  ``pipe_file(..., mode="create")``), atomic against other writers; on other filesystems a
  check just before the write, under a lock kept on the filesystem object.
- **Conditional writes** (``if_version``): on S3 the version is the object's ETag, read with
  the content in one ``GetObject``, and the write is a PUT with ``If-Match``, so S3 itself
  refuses it when the object changed. On other filesystems the version is the SHA-256 of the
  content, and the check and the write happen under the lock kept on the filesystem object
  (every write through that object takes it): atomic between the workspaces that share one
  filesystem object (a memory filesystem is never shared further), not between processes.
- **Batched reads** for search: ``fs.cat(paths, on_error="return")``, which async
  filesystems such as s3fs run concurrently, in batches bounded by file count and by bytes.
- **Bounded read-ahead** for paged reads: s3fs reads 50 MiB blocks by default, which a page
  of 2,000 lines does not need.
- **Folder markers** (empty ``name/`` objects that S3 consoles and sync tools create for
  empty folders) are folders: never listed as files, never searched.
- **An access check** (:meth:`FsspecStore.check`) for opening: one write and delete of a
  hidden probe object where writing could be refused.

Names of the form ``.ctxfs-<32 hex digits>.tmp`` (the probe, and the temporary files of
:class:`~ctxfs.backends.LocalStore` on a filesystem shared with one) are never listed.
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any, BinaryIO

from fsspec import AbstractFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from ctxfs._errors import (
    BackendError,
    IsADirectoryPathError,
    NotADirectoryPathError,
    PathExistsError,
    PathNotFoundError,
)
from ctxfs.backends._errors import (
    conflict_error,
    reason_of,
    s3_error_code,
    storage_error,
    translate_error,
    translate_errors,
)
from ctxfs.backends._info import FileInfo
from ctxfs.backends._temp import is_temporary_name, temporary_name
from ctxfs.backends._version import content_version

__all__ = ["FETCH_BATCH_BYTES", "FETCH_BATCH_FILES", "READ_BLOCK_BYTES", "FsspecStore"]

READ_BLOCK_BYTES = 4 * 2**20
"""Read-ahead block of paged reads (bounds the memory one page read holds)."""

FETCH_BATCH_FILES = 64
"""Most files fetched in one concurrent batch."""

FETCH_BATCH_BYTES = 32 * 2**20
"""Most bytes fetched in one concurrent batch (a larger file is fetched alone)."""

_CONDITIONAL_PUT_PROTOCOLS = frozenset({"s3", "s3a"})
# S3's answers to a conditional request that did not hold: the condition failed (412), or a
# concurrent conditional write to the same key won (409); NoSuchKey: deleted meanwhile.
_CONFLICT_CODES = frozenset(
    {"PreconditionFailed", "412", "ConditionalRequestConflict", "409", "NoSuchKey"}
)
# The attribute of a filesystem object that holds its write lock (see _write_lock).
_LOCK_ATTRIBUTE = "_ctxfs_write_lock"


_GLOB_MAGIC = re.compile(r"([*?\[])")


def _literal(host: str) -> str:
    """``host`` for the fsspec calls that expand glob patterns (``rm``, ``cat``).

    Each ``*``, ``?`` and ``[`` is written as a one-character class, so it matches only
    itself: deleting a file named ``*`` must not delete its whole folder, nor a batched read
    of ``d[1]/x`` return nothing (fsspec would read ``d1/x`` instead).
    """
    return _GLOB_MAGIC.sub(r"[\1]", host)


def _is_folder_marker(raw: Mapping[str, Any]) -> bool:
    """Whether a listed object is an empty ``name/`` key: the marker that S3 consoles and
    sync tools create for an empty folder. It is the folder, never a file of that name."""
    return str(raw.get("name", "")).endswith("/") and not raw.get("size")


class FsspecStore:
    """A folder inside an fsspec filesystem (see the module docstring).

    Args:
        fs: The filesystem.
        root: The folder inside it that is the workspace's ``/``, in the filesystem's own
            form (no protocol); ``""`` for the filesystem's root.
        url: Where it lives, for display; defaults to ``<protocol>://<root>``.
        fetch_batch_files: Most files per batch of :meth:`fetch`.
        fetch_batch_bytes: Most bytes per batch of :meth:`fetch`.

    Attributes:
        fs: The filesystem.
        root: The root folder inside it, without a trailing ``/``.
    """

    def __init__(
        self,
        fs: AbstractFileSystem,
        root: str = "",
        *,
        url: str | None = None,
        fetch_batch_files: int = FETCH_BATCH_FILES,
        fetch_batch_bytes: int = FETCH_BATCH_BYTES,
    ) -> None:
        if fetch_batch_files < 1 or fetch_batch_bytes < 1:
            raise ValueError("fetch_batch_files and fetch_batch_bytes must be >= 1")
        self.fs = fs
        self.root = root.rstrip("/")
        protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
        self._url = url if url is not None else f"{protocols[0]}://{self.root.lstrip('/')}"
        self._conditional_put = not _CONDITIONAL_PUT_PROTOCOLS.isdisjoint(protocols)
        # Named in messages about the storage as a whole ("bucket 'x' does not exist").
        self._bucket = self.root.strip("/").split("/")[0] if self._conditional_put else None
        self._batch_files = fetch_batch_files
        self._batch_bytes = fetch_batch_bytes
        # s3fs asks for an object's size (a HEAD) before each whole read, to split a large
        # object into concurrent ranges; the workspace reads small files one at a time or in
        # concurrent batches already, so one GetObject per file is enough and halves the
        # requests of every read and search.
        self._cat_options: dict[str, Any] = {"max_concurrency": 1} if self._conditional_put else {}

    @property
    def url(self) -> str:
        """Where the store lives, for display."""
        return self._url

    def __repr__(self) -> str:
        return f"FsspecStore({self._url!r})"

    def local_path(self, path: str) -> str | None:
        """Always ``None``: the files are not on this machine's disk as such."""
        return None

    def real_path(self, path: str) -> str:
        """``path`` itself: fsspec filesystems have no links."""
        return path

    def _host(self, path: str) -> str:
        return self.root if path == "/" else f"{self.root}{path}"

    def _errors(self, path: str) -> AbstractContextManager[None]:
        return translate_errors(path, bucket=self._bucket)

    def _translate(self, exc: BaseException, path: str) -> Exception:
        return translate_error(exc, path, bucket=self._bucket)

    def _virtual(self, name: str) -> str:
        name = name.rstrip("/")
        if not name.startswith("/") and self.root.startswith("/"):
            name = "/" + name
        rest = name[len(self.root) :] if name.startswith(self.root) else name
        return "/" + rest.strip("/")

    def _to_info(self, raw: Mapping[str, Any], path: str | None = None) -> FileInfo:
        virtual = path if path is not None else self._virtual(str(raw["name"]))
        if raw.get("type") == "directory":
            return FileInfo(virtual, "directory")
        size = raw.get("size")
        return FileInfo(virtual, "file", int(size) if size is not None else None)

    # -- metadata ---------------------------------------------------------------------------

    def info(self, path: str) -> FileInfo:
        """Metadata of ``path``."""
        with self._errors(path):
            raw = self.fs.info(self._host(path))
        return self._to_info(raw, path)

    def ls(self, path: str) -> list[FileInfo]:
        """The children of folder ``path``."""
        with self._errors(path):
            entries = self.fs.ls(self._host(path), detail=True)
        result: list[FileInfo] = []
        for raw in entries:
            info = self._to_info(raw)
            if is_temporary_name(info.name) or _is_folder_marker(raw):
                continue
            if info.path == path:
                # fsspec lists a file as itself; some stores list a folder's marker too.
                if not info.is_dir:
                    raise NotADirectoryPathError(f"{path}: is a file, not a directory", path=path)
                continue
            result.append(info)
        return result

    def walk(self, path: str) -> Iterator[FileInfo]:
        """Every file below ``path``, from one ``find``."""
        try:
            with self._errors(path):
                found = self.fs.find(self._host(path), withdirs=False, detail=True)
        except PathNotFoundError:
            return
        for raw in found.values():
            info = self._to_info(raw)
            if not info.is_dir and not is_temporary_name(info.name) and not _is_folder_marker(raw):
                yield info

    # -- reading ----------------------------------------------------------------------------

    @contextmanager
    def open_read(self, path: str) -> Iterator[BinaryIO]:
        """A stream reading ahead at most :data:`READ_BLOCK_BYTES`."""
        with (
            self._errors(path),
            self.fs.open(self._host(path), "rb", block_size=READ_BLOCK_BYTES) as stream,
        ):
            yield stream

    def read_bytes(self, path: str) -> bytes:
        """The whole file."""
        with self._errors(path):
            return bytes(self.fs.cat_file(self._host(path), **self._cat_options))

    def _batches(self, files: Iterable[FileInfo]) -> Iterator[list[FileInfo]]:
        # A file of unknown size counts as an equal share of the byte budget.
        share = self._batch_bytes // self._batch_files
        batch: list[FileInfo] = []
        weight = 0
        for info in files:
            size = info.size if info.size is not None else share
            if batch and (len(batch) >= self._batch_files or weight + size > self._batch_bytes):
                yield batch
                batch, weight = [], 0
            batch.append(info)
            weight += size
        if batch:
            yield batch

    def fetch(self, files: Iterable[FileInfo]) -> Iterator[tuple[FileInfo, bytes]]:
        """Each file's content, in concurrent batches; vanished files are skipped."""
        for batch in self._batches(files):
            hosts = [self._host(info.path) for info in batch]
            with self._errors(batch[0].path):
                contents = self.fs.cat(
                    [_literal(h) for h in hosts], on_error="return", **self._cat_options
                )
            for info, host in zip(batch, hosts, strict=True):
                data = contents.get(host)
                if isinstance(data, FileNotFoundError):
                    continue
                if isinstance(data, BaseException):
                    raise self._translate(data, info.path) from data
                if data is not None:
                    yield info, bytes(data)

    # -- writing ----------------------------------------------------------------------------

    def read_versioned(self, path: str) -> tuple[bytes, str]:
        """The whole file and its version: the ETag from the same ``GetObject`` on S3, the
        SHA-256 of the content elsewhere."""
        if self._conditional_put:
            bucket, key = self._bucket_key(path)
            with self._errors(path):
                return _get_object(self.fs, bucket, key)
        with self._write_lock():
            data = self.read_bytes(path)
        return data, content_version(data)

    def write(
        self,
        path: str,
        data: bytes,
        *,
        create_only: bool = False,
        if_version: str | None = None,
    ) -> None:
        """One whole-object write; create-only and ``if_version`` by conditional PUT on S3,
        under the filesystem object's lock elsewhere."""
        if create_only and if_version is not None:
            raise ValueError("create_only and if_version exclude each other")
        host = self._host(path)
        if self._conditional_put:
            if if_version is not None:
                self._put_if_match(path, data, if_version)
                return
            with self._errors(path):
                self.fs.pipe_file(host, data, mode="create" if create_only else "overwrite")
            return
        with self._write_lock():
            if if_version is not None:
                try:
                    current = self.read_bytes(path)
                except PathNotFoundError:
                    raise conflict_error(path, deleted=True) from None
                if content_version(current) != if_version:
                    raise conflict_error(path)
            elif create_only and self._exists(path):
                raise PathExistsError(f"{path}: already exists", path=path)
            with self._errors(path):
                self.fs.pipe_file(host, data)

    def _put_if_match(self, path: str, data: bytes, etag: str) -> None:
        bucket, key = self._bucket_key(path)
        try:
            with self._errors(path):
                self.fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, IfMatch=etag)
        except (BackendError, PathNotFoundError) as exc:
            code = s3_error_code(exc)
            if code not in _CONFLICT_CODES and not isinstance(exc, PathNotFoundError):
                raise
            # A PUT retried after its first answer was lost finds its own bytes there.
            with contextlib.suppress(PathNotFoundError):
                if self.read_bytes(path) == data:
                    return
            deleted = code == "NoSuchKey" or isinstance(exc, PathNotFoundError)
            raise conflict_error(path, deleted=deleted) from None
        finally:
            self.fs.invalidate_cache(self._host(path))

    def _bucket_key(self, path: str) -> tuple[str, str]:
        bucket, key, _version = self.fs.split_path(self._host(path))
        return str(bucket), str(key)

    def _write_lock(self) -> threading.Lock:
        """The lock that every write through this filesystem object takes.

        Kept on the filesystem object itself, so that every store and workspace opened on
        the same object shares it, and nothing else does (no module-level registry).
        """
        lock: threading.Lock = vars(self.fs).setdefault(_LOCK_ATTRIBUTE, threading.Lock())
        return lock

    def _exists(self, path: str) -> bool:
        # Not fs.exists(), which answers False when the store could not be asked.
        try:
            self.info(path)
        except (PathNotFoundError, NotADirectoryPathError):
            return False
        return True

    def check(self, *, write: bool) -> None:
        """Check that the store can be written, by writing and deleting a hidden probe.

        Reading is checked by the caller (:func:`~ctxfs.backends.check_store`); a memory
        filesystem always accepts writes, so it is not probed.

        Raises:
            BackendError: The write was refused; the message says why (no such bucket, no
                credentials, access denied, a filesystem that cannot write at all...).
        """
        if not write or isinstance(self.fs, MemoryFileSystem):
            return
        host = self._host("/" + temporary_name())
        try:
            self.fs.pipe_file(host, b"")
        except Exception as exc:
            storage = storage_error(exc, "/", self._bucket)
            if storage is not None:
                raise storage from exc
            raise BackendError(
                f"the storage cannot be written ({reason_of(exc)}); to only read it, open the "
                "workspace with read_only=['/']",
                path="/",
            ) from exc
        # A store that lets us write but not delete keeps a probe nobody sees.
        with contextlib.suppress(Exception):
            self.fs.rm_file(host)

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Delete a file, or every object below a folder."""
        if not recursive and self.info(path).is_dir:
            raise IsADirectoryPathError(f"{path}: is a directory", path=path)
        with self._errors(path):
            self.fs.rm(_literal(self._host(path)), recursive=recursive)


def _get_object(fs: Any, bucket: str, key: str) -> tuple[bytes, str]:
    """The content and the ETag of one object, from one ``GetObject`` (s3fs)."""
    from fsspec.asyn import sync

    async def get() -> tuple[bytes, str]:
        response = await fs._call_s3("get_object", Bucket=bucket, Key=key)
        body = response["Body"]
        try:
            data = await body.read()
        finally:
            body.close()
        return bytes(data), str(response["ETag"])

    result: tuple[bytes, str] = sync(fs.loop, get)
    return result
