"""A folder on this machine's disk as a workspace store.

What only a local folder has, and this store takes care of:

- **Symbolic links.** Paths are resolved through their links; one that leads outside the root
  is refused (:meth:`LocalStore.real_path`) and never listed. Links to folders are not
  followed by :meth:`LocalStore.walk`, so a link cycle cannot loop.
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
dangling links are not listed (reading a FIFO would block the agent).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

from ctxfs._errors import (
    BackendError,
    IsADirectoryPathError,
    PathNotFoundError,
    UnsafePathError,
)
from ctxfs.backends._errors import conflict_error, translate_error, translate_errors
from ctxfs.backends._info import FileInfo
from ctxfs.backends._temp import is_temporary_name, temporary_name
from ctxfs.backends._version import content_version
from ctxfs.sandbox._local import host_path, real_virtual_path

__all__ = ["LocalStore"]


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
        self._real_root = os.path.realpath(self.root)

    @property
    def url(self) -> str:
        """The root folder's absolute path."""
        return self.root

    def __repr__(self) -> str:
        return f"LocalStore({self.root!r})"

    def _host(self, path: str) -> str:
        return host_path(self.root, path)

    def local_path(self, path: str) -> str | None:
        """The host path of ``path`` (links not resolved)."""
        return self._host(path)

    def real_path(self, path: str) -> str:
        """The virtual path ``path`` leads to once links are followed.

        Raises:
            UnsafePathError: A link on the way leads outside the root.
        """
        return real_virtual_path(self._real_root, self._host(path), path)

    def _inside(self, host: str, path: str) -> bool:
        try:
            real_virtual_path(self._real_root, host, path)
        except UnsafePathError:
            return False
        return True

    # -- metadata ---------------------------------------------------------------------------

    def info(self, path: str) -> FileInfo:
        """Metadata of ``path``, following links."""
        with translate_errors(path):
            found = os.stat(self._host(path))
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

    def _entries(self, folder: str) -> list[os.DirEntry[str]]:
        """The entries of a folder, read in full so that no error escapes half-way."""
        with translate_errors(folder), os.scandir(self._host(folder)) as scan:
            return list(scan)

    def _describe(self, folder: str, entry: os.DirEntry[str]) -> FileInfo | None:
        """A listed entry as a FileInfo, or ``None`` if it is not part of the workspace."""
        path = _child(folder, entry.name)
        if is_temporary_name(entry.name):
            return None
        try:
            if entry.is_symlink() and not self._inside(entry.path, path):
                return None
            if entry.is_dir():
                return FileInfo(path, "directory")
            if entry.is_file():
                return FileInfo(path, "file", entry.stat().st_size)
        except FileNotFoundError:
            return None  # removed since the folder was read, or a dangling link
        except OSError as exc:
            raise translate_error(exc, path) from exc
        return None

    def _is_folder(self, folder: str, entry: os.DirEntry[str]) -> bool:
        """Whether the entry is a folder itself (not a link to one)."""
        try:
            return entry.is_dir(follow_symlinks=False)
        except OSError as exc:
            raise translate_error(exc, _child(folder, entry.name)) from exc

    def ls(self, path: str) -> list[FileInfo]:
        """The children of folder ``path``; links are typed by their target."""
        found = (self._describe(path, entry) for entry in self._entries(path))
        return [info for info in found if info is not None]

    def walk(self, path: str) -> Iterator[FileInfo]:
        """Every regular file below ``path``, with an explicit stack of folders."""
        pending = [path]
        while pending:
            folder = pending.pop()
            try:
                entries = self._entries(folder)
            except PathNotFoundError:
                continue  # removed while the walk ran
            for entry in entries:
                if self._is_folder(folder, entry):
                    pending.append(_child(folder, entry.name))
                    continue
                info = self._describe(folder, entry)
                if info is not None and not info.is_dir:
                    yield info

    # -- reading ----------------------------------------------------------------------------

    @contextmanager
    def open_read(self, path: str) -> Iterator[BinaryIO]:
        """A buffered binary stream over the file."""
        with translate_errors(path), open(self._host(path), "rb") as stream:
            yield stream

    def read_bytes(self, path: str) -> bytes:
        """The whole file."""
        with translate_errors(path), open(self._host(path), "rb") as stream:
            return stream.read()

    def fetch(self, files: Iterable[FileInfo]) -> Iterator[tuple[FileInfo, bytes]]:
        """Each file's content, read one after the other; vanished files are skipped."""
        for info in files:
            try:
                with open(self._host(info.path), "rb") as stream:
                    data = stream.read()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise translate_error(exc, info.path) from exc
            yield info, data

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
        checked under it too (see the module docstring).
        """
        if create_only and if_version is not None:
            raise ValueError("create_only and if_version exclude each other")
        host = self._host(path)
        folder = os.path.dirname(host)
        with translate_errors(path):
            _make_folders(folder)
            temp = os.path.join(folder, temporary_name())
            try:
                with open(temp, "xb") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
                with _folder_lock(folder):
                    if if_version is not None:
                        _check_version(host, path, if_version)
                    if create_only:
                        os.link(temp, host)  # atomic, and fails if host exists
                    else:
                        os.replace(temp, host)
            finally:
                if os.path.lexists(temp):
                    os.unlink(temp)

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
        host = self._host(path)
        with translate_errors(path):
            if not stat.S_ISDIR(os.lstat(host).st_mode):
                os.unlink(host)
            elif not recursive:
                raise IsADirectoryPathError(f"{path}: is a directory", path=path)
            else:
                _remove_tree(host)


@contextmanager
def _folder_lock(folder: str) -> Iterator[None]:
    """An exclusive lock on a folder, between processes and between threads.

    ``flock`` locks an open file description, so each holder opens the folder itself; the
    lock goes with the descriptor when it is closed, even if the process dies.
    """
    import fcntl  # POSIX only; imported here so that importing ctxfs never needs it

    handle = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def _check_version(host: str, path: str, expected: str) -> None:
    """Raise a conflict unless the file at ``host`` has version ``expected``."""
    try:
        with open(host, "rb") as stream:
            current = content_version(stream.read())
    except FileNotFoundError:
        raise conflict_error(path, deleted=True) from None
    if current != expected:
        raise conflict_error(path)


def _make_folders(folder: str) -> None:
    """``os.makedirs`` without its recursion (one frame per missing level)."""
    missing: list[str] = []
    while not os.path.isdir(folder):
        missing.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    for name in reversed(missing):
        try:
            os.mkdir(name)
        except FileExistsError:
            if not os.path.isdir(name):
                raise NotADirectoryError(f"{name} is a file") from None


def _remove_tree(top: str) -> None:
    """``shutil.rmtree`` without its recursion; links are removed, never followed."""
    folders: list[str] = []
    pending = [top]
    while pending:
        folder = pending.pop()
        folders.append(folder)
        with os.scandir(folder) as scan:
            for entry in scan:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                else:
                    os.unlink(entry.path)
    for folder in reversed(folders):  # every folder was listed after its parent
        os.rmdir(folder)
