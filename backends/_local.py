"""A folder on this machine's disk as a workspace store.

What only a local folder has, and this store takes care of:

- **Symbolic links.** Paths are walked one folder descriptor at a time, links read and
  followed by the store itself (:mod:`ctxfs.backends._descriptors`), never by the kernel: one
  that leads outside the root is refused (:meth:`LocalStore.real_path`) and never listed, and
  a folder swapped for a link while an operation runs cannot take it outside the root. Links
  to folders are not followed by :meth:`LocalStore.walk`, so a link cycle cannot loop.
- **Atomic writes.** A write goes to a temporary file in the target's folder, is flushed to
  disk, then renamed over the target; a create-only write hard-links the temporary file
  instead, which fails if the name exists (atomic, unlike a check before the write). The
  temporary files are named ``.ctxfs-<32 hex digits>.tmp`` and never listed.
- **Conditional writes.** A file's version is the SHA-256 of its content. The rename (or
  link) happens under an exclusive ``flock`` on the target's folder, taken by every write of
  every process, so a write with ``if_version`` checks the version and renames with no other
  write in between. The lock leaves no file behind.
- **Depth.** Walking, creating parent folders and deleting trees are loops, not recursion:
  a tree 1,000 folders deep works.

Only regular files and folders are part of the workspace; FIFOs, sockets, device files and
dangling links are not listed (reading a FIFO would block the agent), and opening one is
refused without blocking.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import BinaryIO

from ctxfs._errors import (
    BackendError,
    IsADirectoryPathError,
    PathNotFoundError,
    UnsafePathError,
)
from ctxfs.backends._descriptors import FOLDER_FLAGS, HostTree, remove_tree
from ctxfs.backends._errors import conflict_error, translate_error, translate_errors
from ctxfs.backends._info import FileInfo
from ctxfs.backends._temp import is_temporary_name, temporary_name
from ctxfs.backends._version import content_version

__all__ = ["LocalStore"]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC


_FIRST_READ = 1 << 18
_LARGEST_READ = 1 << 24

_HELD = 64
"""Most folder descriptors one walk holds at once."""

_Opened = tuple[int, int]
"""An open file's descriptor and the size it had when opened."""


@dataclass(slots=True)
class _Frame:
    """A folder of a walk: its descriptor (or -1), files to yield, folders to visit."""

    folder: str
    handle: int
    files: list[FileInfo]
    todo: list[str]

    def close(self) -> None:
        if self.handle >= 0:
            os.close(self.handle)
            self.handle = -1


def _child(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder != "/" else f"/{name}"


class LocalStore:
    """A folder on the local disk (see the module docstring for what it guarantees).

    Args:
        root: The folder that is the workspace's ``/``; made absolute, and created if it
            does not exist.

    Raises:
        BackendError: The folder cannot be created (a file is in the way, no permission).

    Attributes:
        root: The absolute host path of the root folder.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.path.abspath(os.path.expanduser(os.fspath(root)))
        try:
            os.makedirs(self.root, exist_ok=True)
        except OSError as exc:
            reason = "a file is in the way" if isinstance(exc, FileExistsError) else exc.strerror
            raise BackendError(
                f"the workspace folder cannot be created ({reason})", path="/"
            ) from exc
        self._tree = HostTree(self.root, os.path.realpath(self.root))

    @property
    def url(self) -> str:
        """The root folder's absolute path."""
        return self.root

    def __repr__(self) -> str:
        return f"LocalStore({self.root!r})"

    def local_path(self, path: str) -> str | None:
        """The host path of ``path`` (links not resolved)."""
        return self.root if path == "/" else os.path.join(self.root, path[1:])

    def real_path(self, path: str) -> str:
        """The virtual path ``path`` leads to once links are followed.

        Raises:
            UnsafePathError: A link on the way leads outside the root.
        """
        with translate_errors(path):
            return self._tree.real_virtual(path)

    # -- metadata ---------------------------------------------------------------------------

    def info(self, path: str) -> FileInfo:
        """Metadata of ``path``, following links."""
        with translate_errors(path), self._tree.resolve(path) as where:
            if not where.exists:
                raise FileNotFoundError(errno.ENOENT, "no such file or directory")
            if where.name is None:
                return FileInfo(path, "directory")
            found = os.stat(where.name, dir_fd=where.folder, follow_symlinks=False)
        if stat.S_ISDIR(found.st_mode):
            return FileInfo(path, "directory")
        if not stat.S_ISREG(found.st_mode):
            # Reading a FIFO would block the agent; such entries are not part of the workspace.
            raise PathNotFoundError(
                f"{path}: not a regular file or folder (a FIFO, socket or device), "
                "which the workspace does not use",
                path=path,
            )
        return FileInfo(path, "file", found.st_size)

    @contextmanager
    def _folder(self, path: str) -> Iterator[int]:
        """A descriptor of folder ``path``, reached without following links out."""
        handle = self._tree.open_folder(path)
        try:
            yield handle
        finally:
            os.close(handle)

    def _link(self, folder: str, name: str) -> FileInfo | None:
        """A link, described by its target; ``None`` if it dangles or leads out of the root."""
        try:
            return self.info(_child(folder, name))
        except (PathNotFoundError, UnsafePathError):
            return None

    def ls(self, path: str) -> list[FileInfo]:
        """The children of folder ``path``; links are typed by their target."""
        with translate_errors(path), self._folder(path) as handle:
            listing = _entries(handle, path)
        folders = [FileInfo(_child(path, name), "directory") for name in listing.folders]
        links = (self._link(path, name) for name in listing.links)
        return [*listing.files, *folders, *(info for info in links if info is not None)]

    def walk(self, path: str, *, sizes: bool = True) -> Iterator[FileInfo]:
        """Every regular file below ``path``, depth first, with an explicit stack.

        With ``sizes=False`` the files are described without their size (``None``): the
        size costs a call per file, which a search that reads every file anyway (and learns
        the size as it opens it, see :meth:`fetch_within`) need not pay.

        A folder is opened relative to its parent's descriptor, held while the parent still
        has folders to visit (at most :data:`_HELD` at once; past that a folder is reached
        down from the root again). A folder removed while the walk runs is skipped.
        """
        stack: list[_Frame] = []
        try:
            self._visit(stack, path, None, sizes)
            while stack:
                yield from stack[-1].files
                stack[-1].files = []
                frame = stack[-1]
                if not frame.todo:
                    stack.pop().close()
                    continue
                name = frame.todo.pop()
                parent = frame.handle if frame.handle >= 0 else None
                self._visit(stack, _child(frame.folder, name), (parent, name), sizes)
                if not frame.todo:
                    frame.close()  # nothing else to open from it
        finally:
            for frame in stack:
                frame.close()

    def _visit(
        self,
        stack: list[_Frame],
        folder: str,
        via: tuple[int | None, str] | None,
        sizes: bool = True,
    ) -> None:
        """List ``folder`` onto the stack: its files to yield, its folders to visit."""
        try:
            with translate_errors(folder):
                handle = self._open_folder(folder, via)
        except PathNotFoundError:
            return  # removed while the walk ran
        try:
            with translate_errors(folder):
                listing = _entries(handle, folder, sizes)
        except BaseException:
            os.close(handle)
            raise
        frame = _Frame(folder, handle, listing.files, listing.folders)
        for name in listing.links:
            info = self._link(folder, name)
            if info is not None and not info.is_dir:
                frame.files.append(info)
        held = sum(1 for f in stack[-_HELD:] if f.handle >= 0)
        if not frame.todo or held >= _HELD:
            frame.close()
        stack.append(frame)

    def _open_folder(self, folder: str, via: tuple[int | None, str] | None) -> int:
        if via is not None and via[0] is not None:
            try:
                return os.open(via[1], FOLDER_FLAGS, dir_fd=via[0])
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                # swapped for a link since it was listed: walk to it from the root
        return self._tree.open_folder(folder)

    # -- reading ----------------------------------------------------------------------------

    def _open(self, path: str) -> _Opened:
        """A descriptor of regular file ``path`` and its size, links followed inside the root
        only."""
        with self._tree.resolve(path) as where:
            if not where.exists:
                raise FileNotFoundError(errno.ENOENT, "no such file or directory")
            if where.name is None:
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            return _regular(os.open(where.name, _READ_FLAGS, dir_fd=where.folder), path)

    @contextmanager
    def open_read(self, path: str) -> Iterator[BinaryIO]:
        """A buffered binary stream over the file."""
        with translate_errors(path), open(self._open(path)[0], "rb") as stream:
            yield stream

    def read_bytes(self, path: str) -> bytes:
        """The whole file."""
        with translate_errors(path):
            return _read_all(self._open(path))

    def fetch(self, files: Iterable[FileInfo]) -> Iterator[tuple[FileInfo, bytes]]:
        """Each file's content, read one after the other; vanished files are skipped.

        The files of one folder are opened relative to one descriptor of it. (A thread
        reading ahead was measured slower: the reads are short and the hand-over is not.)
        """
        for info, data in self.fetch_within(files, None):
            assert data is not None  # no cap: every file is read
            yield info, data

    def fetch_within(
        self, files: Iterable[FileInfo], max_bytes: int | None
    ) -> Iterator[tuple[FileInfo, bytes | None]]:
        """Like :meth:`fetch`, for files listed without their size (``walk(sizes=False)``):
        each is yielded described with the size it has when opened, and a file over
        ``max_bytes`` with ``None`` instead of its content, unread."""
        current: str | None = None
        handle = -1
        try:
            for info in files:
                folder, _, name = info.path.rpartition("/")
                try:
                    if folder != current:
                        if handle >= 0:
                            os.close(handle)
                            handle = -1
                        current = folder
                        handle = self._tree.open_folder(folder or "/")
                    opened = self._open_at(handle, name, info.path)
                    if info.size is None:
                        info = FileInfo(info.path, "file", opened[1])
                    if max_bytes is not None and opened[1] > max_bytes:
                        os.close(opened[0])
                        yield info, None
                        continue
                    data = _read_all(opened)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    raise translate_error(exc, info.path) from exc
                yield info, data
        finally:
            if handle >= 0:
                os.close(handle)

    def _open_at(self, folder: int, name: str, path: str) -> _Opened:
        try:
            return _regular(os.open(name, _READ_FLAGS, dir_fd=folder), path)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
        return self._open(path)  # a link: followed by the walk, inside the root only

    # -- writing ----------------------------------------------------------------------------

    def read_versioned(self, path: str) -> tuple[bytes, str]:
        """The whole file and its version (the SHA-256 of what was read)."""
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
        """Write through a temporary file renamed (or, create-only, hard-linked) into place.

        The rename happens under the folder's lock; with ``if_version`` the version is
        checked under it too (see the module docstring). Missing folders are created; the
        last name is replaced as it is (a link there is replaced, never followed).
        """
        if create_only and if_version is not None:
            raise ValueError("create_only and if_version exclude each other")
        with (
            translate_errors(path),
            self._tree.resolve(path, follow_last=False, create_folders=True) as where,
        ):
            if where.name is None:
                raise IsADirectoryError(errno.EISDIR, "is a directory")
            folder, name = where.folder, where.name
            temp = temporary_name()
            handle = os.open(temp, _TEMP_FLAGS, 0o666, dir_fd=folder)
            try:
                with open(handle, "wb") as stream:
                    stream.write(data)
                    stream.flush()
                    os.fsync(stream.fileno())
                _lock(folder)
                if if_version is not None:
                    self._check_version(folder, name, path, if_version)
                if create_only:
                    # atomic, and fails if the name exists
                    os.link(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
                else:
                    os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
            finally:
                with suppress(FileNotFoundError):
                    os.unlink(temp, dir_fd=folder)
        # The lock went with the folder's descriptor, closed when the block ended.

    def _check_version(self, folder: int, name: str, path: str, expected: str) -> None:
        """Raise a conflict unless the file has version ``expected``."""
        try:
            current = content_version(_read_all(self._open_at(folder, name, path)))
        except FileNotFoundError:
            raise conflict_error(path, deleted=True) from None
        if current != expected:
            raise conflict_error(path)

    def check(self, *, write: bool) -> None:
        """Check that the root folder can be listed (and, with ``write``, written in).

        Asks the operating system for the permissions, without writing anything.

        Raises:
            BackendError: It cannot; the message does not name the folder's host path.
        """
        needed = os.R_OK | os.X_OK | (os.W_OK if write else 0)
        # The effective ids are what the kernel checks when the folder is used.
        effective = os.access in os.supports_effective_ids
        if not os.access(self.root, needed, effective_ids=effective):
            what = "read and written" if write else "read"
            raise BackendError(
                f"the workspace folder cannot be {what}: permission denied", path="/"
            )

    def remove(self, path: str, *, recursive: bool = False) -> None:
        """Delete a file or link (never what a link points to), or a whole folder."""
        with translate_errors(path), self._tree.resolve(path, follow_last=False) as where:
            if not where.exists:
                raise FileNotFoundError(errno.ENOENT, "no such file or directory")
            if where.name is None:
                raise IsADirectoryPathError("/ is the workspace root", path=path)
            found = os.stat(where.name, dir_fd=where.folder, follow_symlinks=False)
            if not stat.S_ISDIR(found.st_mode):
                os.unlink(where.name, dir_fd=where.folder)
            elif not recursive:
                raise IsADirectoryPathError(f"{path}: is a directory", path=path)
            else:
                remove_tree(where.folder, where.name)


@dataclass(slots=True)
class _Listing:
    """The entries of a folder: its regular files described, its folders and links named.
    Other entries (FIFOs, sockets, devices) and temporary files are left out."""

    files: list[FileInfo]
    folders: list[str]
    links: list[str]


def _entries(handle: int, folder: str, sizes: bool = True) -> _Listing:
    """The entries of the open folder ``folder``, read in full so that no error escapes
    half-way. One pass, and no call per file but the one for its size (``sizes=False``:
    none, the files' sizes left ``None``): a walk over many files spends its time here."""
    listing = _Listing([], [], [])
    files, folders, links = listing.files, listing.folders, listing.links
    prefix = "/" if folder == "/" else folder + "/"
    with os.scandir(handle) as scan:
        for entry in scan:
            name = entry.name
            if name.startswith(".ctxfs-") and is_temporary_name(name):
                continue
            try:
                # follow_symlinks=False: a link is neither a file nor a folder here
                if entry.is_file(follow_symlinks=False):
                    size = entry.stat(follow_symlinks=False).st_size if sizes else None
                    files.append(FileInfo(prefix + name, "file", size))
                elif entry.is_dir(follow_symlinks=False):
                    folders.append(name)
                elif entry.is_symlink():
                    links.append(name)
            except FileNotFoundError:
                continue  # removed since the folder was read
            except OSError as exc:
                raise translate_error(exc, prefix + name) from exc
    return listing


def _lock(folder: int) -> None:
    """Take an exclusive lock on an open folder, between processes and between threads.

    ``flock`` locks an open file description, and each writer opened the folder itself; the
    lock goes with the descriptor when it is closed, even if the process dies.
    """
    import fcntl  # POSIX only; imported here so that importing ctxfs never needs it

    fcntl.flock(folder, fcntl.LOCK_EX)


def _regular(handle: int, path: str) -> _Opened:
    """``handle`` and the file's size if it is a regular file; closed, and an error, if not."""
    try:
        found = os.fstat(handle)
    except BaseException:
        os.close(handle)
        raise
    mode = found.st_mode
    if stat.S_ISREG(mode):
        return handle, found.st_size
    os.close(handle)
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory")
    raise PathNotFoundError(
        f"{path}: not a regular file (a FIFO, socket or device), which the workspace does not use",
        path=path,
    )


def _read_all(opened: _Opened) -> bytes:
    """Everything in an open file, then closed (plain reads: no buffered file object).

    The first read asks for one byte more than the size the file had when it was opened:
    getting exactly that size back is the end of the file, so a file that did not change
    costs one read (a file that grew meanwhile is read on to its end).
    """
    handle, size = opened
    try:
        want = size + 1 if size < _LARGEST_READ else _LARGEST_READ
        first = os.read(handle, want)
        if len(first) == size:
            return first
        parts = [first]
        want = max(_FIRST_READ, want)
        while chunk := os.read(handle, want):
            parts.append(chunk)
            want = min(want * 2, _LARGEST_READ)
    finally:
        os.close(handle)
    return parts[0] if len(parts) == 1 else b"".join(parts)
