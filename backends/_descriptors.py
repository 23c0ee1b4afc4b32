"""Paths on the local disk, walked one folder descriptor at a time.

A check on a host path followed by an ``open`` of the same path leaves a window: a folder on
the way can be swapped for a symbolic link in between, and the open then lands wherever the
link points. :class:`HostTree` leaves no such window. It opens the root once per walk and goes
down one name at a time, each folder opened relative to the one above it
(``os.open(name, dir_fd=...)``) with ``O_NOFOLLOW | O_DIRECTORY``, so the kernel refuses to
follow a link there. A link found on the way (by ``lstat``, never followed by the kernel) is
read and its target walked the same way, as a virtual path: a relative target from the folder
that holds the link, an absolute one only if it names a place under the root. A target that
climbs above the root or names a place outside it is refused. The final name is then used
relative to the last folder's descriptor, again without following links.

What the caller gets is a descriptor of a folder that is really under the root, and a name
in it that was not a link when it was looked at; opening or replacing that name relative to
the descriptor cannot leave the root, whatever is swapped meanwhile. A swap that the walk
meets (a folder turned into a link between its ``lstat`` and its ``open``) is looked at again,
as a link.
"""

from __future__ import annotations

import errno
import os
import stat
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from ctxfs._errors import UnsafePathError

__all__ = ["FOLDER_FLAGS", "MAX_LINKS", "HostTree", "Resolved", "lstat_at", "remove_tree"]

MAX_LINKS = 40
"""Most links one walk follows (as the kernel's own limit), past which it is a loop."""

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_SWAPPED = frozenset({errno.ELOOP, errno.ENOTDIR, errno.EMLINK})


def lstat_at(name: str, folder: int) -> os.stat_result:
    """``lstat`` of ``name`` in the folder open as ``folder`` (a seam the race tests hook)."""
    return os.stat(name, dir_fd=folder, follow_symlinks=False)


@dataclass(frozen=True, slots=True)
class Resolved:
    """Where a virtual path really is: a folder under the root, open, and a name in it.

    Attributes:
        folder: A descriptor of the folder (owned by the :meth:`HostTree.resolve` block).
        parts: The real path of that folder, as names from the root.
        name: The last name, not a link when looked at (``None`` for the root itself).
        exists: Whether ``name`` was there.
    """

    folder: int
    parts: tuple[str, ...]
    name: str | None
    exists: bool

    @property
    def virtual(self) -> str:
        """The real virtual path (links followed)."""
        names = (*self.parts, self.name) if self.name is not None else self.parts
        return "/" + "/".join(names)


class HostTree:
    """A folder of the local disk, walked relative to descriptors (see the module docstring).

    Args:
        root: The folder, absolute, as given.
        real_root: The same, with its own links resolved (``os.path.realpath``).
    """

    def __init__(self, root: str, real_root: str) -> None:
        self._prefixes = tuple({root.rstrip(os.sep), real_root.rstrip(os.sep)})
        self._real_root = real_root

    def _open_root(self) -> int:
        return os.open(self._real_root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)

    def _under_root(self, target: str) -> list[str] | None:
        """The names of an absolute link target below the root, or ``None`` if outside."""
        for prefix in self._prefixes:
            if target == prefix or target.startswith(prefix + os.sep):
                return target[len(prefix) :].split(os.sep)
        return None

    @contextmanager
    def resolve(
        self, virtual: str, *, follow_last: bool = True, create_folders: bool = False
    ) -> Iterator[Resolved]:
        """Walk to a normalised virtual path; yields where it really is.

        Args:
            virtual: The path, rooted at ``/``.
            follow_last: Follow a link in the last name too (reading); without it the
                last name is taken as it is (replacing or deleting a link, never its target).
            create_folders: Create missing folders on the way (writing).

        Raises:
            UnsafePathError: A link on the way leads outside the root.
            FileNotFoundError: A folder on the way is missing (and not created), or a file
                stands where a folder should be and ``create_folders`` is not set.
            NotADirectoryError: A file stands where a folder must be created.
            OSError: With ``ELOOP``, too many links.
        """
        folder, parts, name, exists = self._walk(virtual, follow_last, create_folders)
        try:
            yield Resolved(folder, tuple(parts), name, exists)
        finally:
            os.close(folder)

    def open_folder(self, virtual: str) -> int:
        """A descriptor of the folder at ``virtual`` (the caller closes it).

        Raises:
            UnsafePathError: A link on the way leads outside the root.
            FileNotFoundError: Nothing is there (a file on the way included).
            NotADirectoryError: A file is there.
        """
        folder, _parts, name, exists = self._walk(virtual, True, False)
        if name is None:
            return folder
        try:
            if not exists:
                raise FileNotFoundError(errno.ENOENT, "no such file or directory")
            return os.open(name, FOLDER_FLAGS, dir_fd=folder)
        finally:
            os.close(folder)

    def real_virtual(self, virtual: str) -> str:
        """The virtual path ``virtual`` really leads to, links followed; what does not exist
        yet is taken as it is (so is a name under a file).

        Raises:
            UnsafePathError: A link on the way leads outside the root.
        """
        folder, parts, name, _exists = self._walk(virtual, True, False, lenient=True)
        os.close(folder)
        return "/" + "/".join((*parts, name) if name is not None else parts)

    def _walk(
        self, virtual: str, follow_last: bool, create: bool, *, lenient: bool = False
    ) -> tuple[int, list[str], str | None, bool]:
        pending = deque(name for name in virtual.split("/") if name)
        folder = self._open_root()
        parts: list[str] = []
        links = 0
        try:
            while pending:
                name = pending.popleft()
                if name in ("", "."):
                    continue
                if name == "..":  # only from a link's target: virtual paths have none
                    if not parts:
                        raise _outside(virtual)
                    parts.pop()
                    os.close(folder)
                    folder = self._reopen(parts, virtual)
                    continue
                last = not pending
                try:
                    found = lstat_at(name, folder)
                except (FileNotFoundError, NotADirectoryError) as exc:
                    if last:
                        return folder, parts, name, False
                    if lenient:  # nothing below a missing name can be a link
                        rest = _past(name, pending)
                        if rest is not None:  # names not on disk to the end
                            return folder, [*parts, *rest], None, False
                        continue  # a '..' climbed back onto the disk: walk on from here
                    if not create or isinstance(exc, NotADirectoryError):
                        raise
                    with suppress(FileExistsError):  # made meanwhile: look at it again
                        os.mkdir(name, dir_fd=folder)
                    pending.appendleft(name)
                    continue
                if stat.S_ISLNK(found.st_mode) and (follow_last or not last):
                    links += 1
                    if links > MAX_LINKS:
                        raise OSError(errno.ELOOP, "too many levels of symbolic links")
                    target = os.readlink(name, dir_fd=folder)
                    if os.path.isabs(target):
                        below = self._under_root(target)
                        if below is None:
                            raise _outside(virtual)
                        parts.clear()
                        os.close(folder)
                        folder = self._open_root()
                        pending.extendleft(reversed(below))
                    else:
                        pending.extendleft(reversed(target.split(os.sep)))
                    continue
                if last:
                    return folder, parts, name, True
                if not stat.S_ISDIR(found.st_mode):
                    if lenient:
                        rest = _past(name, pending)
                        if rest is not None:  # names not on disk to the end
                            return folder, [*parts, *rest], None, False
                        continue  # a '..' climbed back onto the disk: walk on from here
                    if not create:
                        # Nothing is below a file: "not found", as on object stores, where
                        # a key below an object's name is just another missing key.
                        raise FileNotFoundError(errno.ENOENT, "no such file or directory")
                    raise NotADirectoryError(errno.ENOTDIR, "not a directory")
                try:
                    child = os.open(name, FOLDER_FLAGS, dir_fd=folder)
                except OSError as exc:
                    if exc.errno not in _SWAPPED:
                        raise
                    # Swapped for a link (or a file) since the lstat: look at it again.
                    links += 1
                    if links > MAX_LINKS:
                        raise
                    pending.appendleft(name)
                    continue
                os.close(folder)
                folder = child
                parts.append(name)
        except BaseException:
            os.close(folder)
            raise
        return folder, parts, None, True

    def _reopen(self, parts: list[str], virtual: str) -> int:
        """A descriptor of the real folder ``parts``, opened down from the root."""
        folder = self._open_root()
        try:
            for name in parts:
                child = os.open(name, FOLDER_FLAGS, dir_fd=folder)
                os.close(folder)
                folder = child
        except OSError as exc:
            os.close(folder)
            if exc.errno in _SWAPPED:
                raise _outside(virtual) from None
            raise
        return folder


def _outside(virtual: str) -> UnsafePathError:
    return UnsafePathError(
        f"path {virtual!r} goes through a symbolic link that leads outside the workspace; "
        "it cannot be read or written",
        path=virtual,
    )


def _past(name: str, pending: deque[str]) -> list[str] | None:
    """The names from ``name`` (not a folder on disk) on, ``.`` and ``..`` among them applied
    as text, as ``realpath`` does; ``None`` (with ``pending`` left at what follows) when a
    ``..`` climbs back to the folder ``name`` is in: what follows is walked on disk again,
    links and all."""
    names = [name]
    while pending:
        part = pending.popleft()
        if part == "..":
            names.pop()
            if not names:
                return None
        elif part not in ("", "."):
            names.append(part)
    return names


def remove_tree(parent: int, name: str) -> None:
    """Delete folder ``name`` of open folder ``parent`` and all it holds, links not followed.

    A loop holding one descriptor at a time (a tree 1,000 folders deep needs no recursion
    and no thousand descriptors): it goes down into the first folder it finds, deletes the
    other entries, and climbs back through ``..``, checked to be the folder it came from (a
    folder moved meanwhile stops the deletion rather than carry it elsewhere).

    Raises:
        OSError: An entry could not be deleted, or a folder moved while it ran.
    """
    current = os.open(name, FOLDER_FLAGS, dir_fd=parent)
    ids = [_identity(current)]
    names: list[str] = []
    try:
        while True:
            below: str | None = None
            removed = False
            with os.scandir(current) as scan:
                for entry in scan:
                    if entry.is_dir(follow_symlinks=False):
                        below = entry.name
                        break
                    os.unlink(entry.name, dir_fd=current)
                    removed = True
            if below is not None:
                child = os.open(below, FOLDER_FLAGS, dir_fd=current)
                os.close(current)
                current = child
                ids.append(_identity(current))
                names.append(below)
                continue
            if removed:
                continue  # read it once more: entries may hide while others are deleted
            if not names:
                break
            up = os.open("..", FOLDER_FLAGS, dir_fd=current)
            os.close(current)
            current = up
            ids.pop()
            if _identity(current) != ids[-1]:
                raise OSError(errno.ESTALE, "a folder moved while it was being deleted")
            os.rmdir(names.pop(), dir_fd=current)
    finally:
        os.close(current)
    os.rmdir(name, dir_fd=parent)


def _identity(folder: int) -> tuple[int, int]:
    found = os.fstat(folder)
    return found.st_dev, found.st_ino
