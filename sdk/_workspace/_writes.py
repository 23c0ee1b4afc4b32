"""Writes that go only where they may and lose nothing.

:class:`ReadOnlyAreas` is the value a workspace (and each of its views) holds: the folders
that refuse writes, edits and deletes, compared case-folded, which one a path lies in, and
the message that refuses a write there.

:func:`check_write_target` refuses a write the same way on every store (a folder in the way,
a file above, a create-only file that exists, a conditional write to a deleted file).
:func:`update_file` reads, changes and writes only if unchanged, retrying, over two methods
of the workspace (a :class:`VersionedFiles`): a versioned read and a conditional write.
:class:`Replacement` is the change an exact-text edit makes, checked again on every content
the loop reads.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterable
from typing import Protocol

from ctxfs._errors import (
    BackendError,
    ConflictError,
    EditError,
    IsADirectoryPathError,
    NotADirectoryPathError,
    PathExistsError,
    PathNotFoundError,
    ReadOnlyPathError,
    WorkspaceError,
)
from ctxfs._layout import SDK_AREAS
from ctxfs._workspace._textread import decode_text
from ctxfs.backends import FileInfo, Store
from ctxfs.sandbox import case_key, is_within, normalize_path

__all__ = [
    "UPDATE_ATTEMPTS",
    "ReadOnlyAreas",
    "Replacement",
    "VersionedFiles",
    "check_write_target",
    "in_file_endings",
    "update_file",
    "write_conditionally",
]

UPDATE_ATTEMPTS = 16
"""Default attempts of :meth:`Workspace.update` (and of :meth:`Workspace.edit`) before a
:class:`~ctxfs._errors.ConflictError`: each failed one means another writer's change won."""

_BACKOFF_SECONDS = 0.002
"""Longest pause before the second attempt; doubled at each attempt up to _BACKOFF_CAP."""

_BACKOFF_CAP = 0.1


class ReadOnlyAreas:
    """The read-only folders of one workspace view.

    Compared with case folded (:func:`ctxfs.sandbox.case_key`), whatever the store: on a
    case-insensitive disk ``/TOOL_RESULTS/x`` is ``/tool_results/x``, so it must be refused
    everywhere the same way.

    Args:
        folders: Virtual folders (normalised here).
    """

    def __init__(self, folders: Iterable[str]) -> None:
        self.folders = tuple(sorted({normalize_path(p) for p in folders}))
        self._keys = tuple(case_key(p) for p in self.folders)

    def area_of(self, path: str) -> str | None:
        """The read-only area a normalised virtual path lies in, if any."""
        key = case_key(path)
        for area, area_key in zip(self.folders, self._keys, strict=True):
            if is_within(key, area_key):
                return area
        return None

    def inside(self, folder: str) -> bool:
        """Whether a read-only area lies inside ``folder`` (deleting it would delete one)."""
        key = case_key(folder)
        return any(is_within(area_key, key) for area_key in self._keys)

    def check_writable(self, virtual: str, real: str) -> None:
        """Refuse a write to ``virtual``, which really leads to ``real`` (links followed).

        Checked on the path as given and on where it really leads: a symlink made inside the
        root must not open a way to write into a read-only area.

        Raises:
            ReadOnlyPathError: Either lies in a read-only area.
        """
        target = virtual if self.area_of(virtual) is not None else real
        area = self.area_of(target)
        if area is None:
            return
        where = virtual if target == virtual else f"{virtual} (a link to {target})"
        if area == "/":
            raise ReadOnlyPathError(
                f"{where} cannot be written: this workspace was opened read-only", path=virtual
            )
        why = " (written by ctxfs itself)" if area in SDK_AREAS else ""
        raise ReadOnlyPathError(
            f"{where} is in the read-only area {area}/{why}; "
            "write your own files elsewhere, e.g. /notes/",
            path=virtual,
        )


def check_write_target(
    lookup: Callable[[str], FileInfo],
    virtual: str,
    *,
    create_only: bool,
    if_version: str | None,
) -> None:
    """Refuse a write to ``virtual`` that no store may make (``lookup`` is the metadata).

    Raises:
        IsADirectoryPathError: A folder is there.
        PathExistsError: ``create_only`` and the file exists.
        ConflictError: ``if_version`` and the file was deleted since it was read.
        NotADirectoryPathError: A file stands where a folder above should be.
    """
    try:
        existing: FileInfo | None = lookup(virtual)
    except (PathNotFoundError, NotADirectoryPathError):  # the latter: a file above it
        existing = None
    if existing is not None:
        if existing.is_dir:
            raise IsADirectoryPathError(
                f"{virtual} is a directory; give a file path inside it", path=virtual
            )
        if create_only:
            raise PathExistsError(f"{virtual} already exists and is write-once", path=virtual)
    elif if_version is not None:
        raise ConflictError(
            f"{virtual} was deleted since it was read; nothing was written: read it again "
            "and redo the change on what it holds now",
            path=virtual,
        )
    else:
        _check_no_file_above(lookup, virtual)


def _check_no_file_above(lookup: Callable[[str], FileInfo], virtual: str) -> None:
    # Object stores would happily create "a.txt/b" next to the object "a.txt", leaving one
    # path that is both a file and a folder; refuse it the same way on every backend.
    parent = virtual.rsplit("/", 1)[0] or "/"
    while parent != "/":
        try:
            above = lookup(parent)
        except (PathNotFoundError, NotADirectoryPathError):
            parent = parent.rsplit("/", 1)[0] or "/"
            continue
        if not above.is_dir:
            raise NotADirectoryPathError(
                f"{parent} is a file, so {virtual} cannot be created inside it; "
                "choose another path",
                path=virtual,
            )
        return


def write_conditionally(
    store: Store, virtual: str, data: bytes, *, create_only: bool, if_version: str | None
) -> None:
    """One write of ``store``: plain, create-only, or only if the file has ``if_version``.

    A conditional write refused on its own bytes is done: a client that retried a write
    whose answer was lost (botocore retries a PUT) finds the write's own result there and
    is refused (``If-None-Match``: it exists; ``If-Match``: it changed). Taken for another
    writer's, a write-once file already written (a workflow's first state, a claim, a
    journal) was reported as "already exists" and its run stopped. So a refused
    conditional write reads the file back, and holding exactly ``data``, returns.

    A create-only write that failed is read back too: holding ``data``, only its answer was
    lost, and it is done; holding a strict prefix of it (a store without atomic writes cut
    it off), the part is removed before the error is raised, so a write-once file is there
    whole or not at all (a torn offload or transcript segment stayed for good, taking its
    name).

    Raises:
        PathExistsError: ``create_only`` and the file holds something else.
        ConflictError: ``if_version`` and the file changed to something else or was deleted.
        BackendError: The write failed (a torn create-only write is removed first).
    """
    try:
        if if_version is None:  # a store written before conditional writes still works
            store.write(virtual, data, create_only=create_only)
        else:
            store.write(virtual, data, if_version=if_version)
    except (PathExistsError, ConflictError):
        if not (create_only or if_version is not None) or _held(store, virtual) != data:
            raise
    except BackendError:
        if not create_only:
            raise
        there = _held(store, virtual)
        if there == data:
            return  # only the answer was lost
        if there is not None and data.startswith(there):
            with contextlib.suppress(WorkspaceError):  # the storage still fails: left
                store.remove(virtual)
        raise


def _held(store: Store, virtual: str) -> bytes | None:
    """What the file at ``virtual`` holds, or ``None`` if it is gone or cannot be read."""
    try:
        return store.read_bytes(virtual)
    except WorkspaceError:
        return None


class VersionedFiles(Protocol):
    """What the update loop needs of a workspace: a versioned read and conditional writes."""

    def read_versioned(self, path: str) -> tuple[bytes, str]:
        """The content of a file and its version."""
        ...

    def write_bytes(
        self, path: str, data: bytes, *, create_only: bool = False, if_version: str | None = None
    ) -> FileInfo:
        """Write a whole file (create-only, or only if it still has ``if_version``)."""
        ...

    def rm(self, path: str, *, recursive: bool = False) -> None:
        """Delete a file."""
        ...


def update_file(
    files: VersionedFiles,
    virtual: str,
    change: Callable[[bytes | None], bytes],
    attempts: int,
) -> FileInfo:
    """Apply ``change`` to the file at ``virtual`` (see :meth:`ctxfs.Workspace.update`)."""
    tried: bytes | None = None
    for attempt in range(attempts):
        if attempt:
            # Random, growing pauses: writers that collided do not collide again in step.
            pause = min(_BACKOFF_SECONDS * 2 ** (attempt - 1), _BACKOFF_CAP)
            time.sleep(random.uniform(0, pause))
        current: bytes | None
        try:
            current, version = files.read_versioned(virtual)
        except (PathNotFoundError, NotADirectoryPathError):  # the latter: a file above
            current, version = None, None
        if tried is not None and current == tried:
            # The write refused as a conflict was done: a client that retried a write whose
            # answer was lost (botocore does) finds its own write there and is refused. A
            # change applied again would be applied twice (lines appended twice).
            return FileInfo(virtual, "file", len(tried))
        new = change(current)
        if not isinstance(new, bytes):
            raise TypeError(f"change must return bytes, not {type(new).__name__}")
        if new == current:
            return FileInfo(virtual, "file", len(new))
        tried = new
        try:
            if version is None:
                return files.write_bytes(virtual, new, create_only=True)
            return files.write_bytes(virtual, new, if_version=version)
        except (ConflictError, PathExistsError):
            continue
        except BackendError:
            if _holds_or_undo(files, virtual, current, new):  # only the reply was lost
                return FileInfo(virtual, "file", len(new))
            raise
    raise ConflictError(
        f"{virtual}: the file changed since it was read, {attempts} times in a row (other "
        "writers keep changing it); nothing was written: read it again and retry",
        path=virtual,
    )


def _holds_or_undo(files: VersionedFiles, virtual: str, old: bytes | None, new: bytes) -> bool:
    """After a failed write of ``new`` over ``old``: whether the file holds ``new`` now (its
    reply was lost), else put ``old`` back if the file holds part of ``new``.

    A write reported as failed may have been done: a caller that wrote again would apply
    its change twice (a line appended twice), one that gave up would report a change that is
    there as failed. A store's writes are atomic by contract; a backend that breaks it
    mid-way (what :class:`~ctxfs.testing.FaultyStore` calls a torn write) leaves a strict
    prefix of what was being written, and every later update of the file would fail to
    parse it. Only that, recognised exactly, is replaced by what it overwrote (removed, if
    the file was new), conditional on the torn content; anything else (another writer's
    content) stays. ``False`` also when the file cannot be read or restored now.
    """
    try:
        current, version = files.read_versioned(virtual)
    except WorkspaceError:
        return False
    if current == new:
        return True
    if current != old and new.startswith(current):
        with contextlib.suppress(WorkspaceError):  # the storage still fails: left as it is
            if old is None:
                files.rm(virtual)
            else:
                files.write_bytes(virtual, old, if_version=version)
    return False


def _crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def in_file_endings(text: str, old: str, new: str) -> tuple[str, str]:
    r"""``old`` and ``new`` with ``\r\n`` line ends when ``text`` holds ``old`` only so.

    ``read_file`` shows a line without the ``\r`` that ends it, so text copied from it
    across lines of a CRLF file has ``\n`` where the file has ``\r\n``. When ``old`` is
    not in ``text`` as given but is with ``\r\n`` line ends, both are given those, and the
    file keeps its endings; otherwise they are returned as they are.

    >>> in_file_endings("a\r\nb\r\n", "a\nb", "x\ny")
    ('a\r\nb', 'x\r\ny')
    """
    crlf = _crlf(old)
    if crlf == old or old in text or crlf not in text:
        return old, new
    return crlf, _crlf(new)


class Replacement:
    """The change of an exact-text edit: ``old`` becomes ``new`` in the content given.

    ``old`` is found as given or, in a file with CRLF line ends, with those (see
    :func:`in_file_endings`). Raises (when called) :class:`~ctxfs._errors.EditError` if
    ``old`` is absent or, without ``replace_all``, ambiguous; :attr:`count` is how many
    occurrences the last call replaced.
    """

    def __init__(self, virtual: str, old: str, new: str, *, replace_all: bool) -> None:
        if old == "":
            raise EditError(
                "old_string is empty; give the exact text to replace, or use write_file "
                "to write a whole file",
                path=virtual,
            )
        if old == new:
            raise EditError("old_string and new_string are identical; nothing to do", path=virtual)
        self._virtual = virtual
        self._old = old
        self._new = new
        self._replace_all = replace_all
        self.count = 0

    def __call__(self, data: bytes | None) -> bytes:
        virtual, old, new = self._virtual, self._old, self._new
        if data is None:
            raise PathNotFoundError(f"{virtual}: no such file or directory", path=virtual)
        text = decode_text(virtual, data)
        old, new = in_file_endings(text, old, new)
        count = text.count(old)
        if count == 0:
            raise EditError(
                f"old_string was not found in {virtual}; read the file again and copy the "
                "exact text, including whitespace and indentation",
                path=virtual,
            )
        if count > 1 and not self._replace_all:
            raise EditError(
                f"old_string occurs {count} times in {virtual}; add surrounding lines to "
                "make it unique, or set replace_all to replace every occurrence",
                path=virtual,
            )
        self.count = count if self._replace_all else 1
        updated = text.replace(old, new) if self._replace_all else text.replace(old, new, 1)
        return updated.encode("utf-8")
