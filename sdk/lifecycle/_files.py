"""The files of the SDK's areas with their sizes and modification times, and empty folders.

The :class:`~ctxfs.backends.Store` seam lists files with their sizes only. How recently a
thread was active is the newest modification time of its files, which every backend keeps
in its own way: ``os.stat`` for a folder on this machine, the listing's ``LastModified``
(S3), ``mtime`` (local fsspec), ``created`` (memory) or ``updated`` (GCS) for an fsspec
filesystem. :func:`list_files` asks the store for the listing (so its filtering holds) and
the backend for the times, in one more listing per area; on any other store the times are
unknown (``None``), and a thread whose activity is unknown is never collected.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ctxfs._errors import PathNotFoundError
from ctxfs._workspace._workspace import Workspace
from ctxfs.backends import FsspecStore, LocalStore, guard_store, translate_errors

__all__ = ["FileLister", "StampedFile", "list_files", "prune_empty_folders"]

_TIME_KEYS = ("LastModified", "mtime", "modified", "last_modified", "updated", "created")


@dataclass(frozen=True, slots=True)
class StampedFile:
    """A file of the workspace with its size and when it was last written.

    Attributes:
        path: Its virtual path.
        size: Its size in bytes.
        modified: When it was last written (UTC), or ``None`` if the store does not say.
    """

    path: str
    size: int
    modified: datetime | None


FileLister = Callable[[Workspace, str], list[StampedFile]]
"""Lists every file below a folder of a workspace (nothing if the folder is missing):
:func:`list_files`, or your own (a store that keeps times elsewhere, a test's clock)."""


def list_files(workspace: Workspace, folder: str) -> list[StampedFile]:
    """Every file below ``folder``, sorted by path, with its size and modification time.

    A missing folder has no files.

    Raises:
        WorkspaceError: The storage could not be asked.
    """
    store = guard_store(workspace.store)  # a raw OSError is a ctxfs error too
    listed = sorted(store.walk(folder), key=lambda info: info.path)
    times = _times(workspace, folder) if listed else {}
    return [StampedFile(f.path, f.size or 0, times.get(f.path)) for f in listed]


def _times(workspace: Workspace, folder: str) -> Mapping[str, datetime]:
    store = workspace.store
    if isinstance(store, LocalStore):
        return _local_times(store, folder)
    if isinstance(store, FsspecStore):
        return _fsspec_times(store, folder)
    return {}


def _local_times(store: LocalStore, folder: str) -> dict[str, datetime]:
    host = store.local_path(folder)
    found: dict[str, datetime] = {}
    if host is None:
        return found
    with translate_errors(folder):
        for top, _dirs, names in os.walk(host):
            relative = os.path.relpath(top, host).replace(os.sep, "/")
            base = folder if relative == "." else f"{folder}/{relative}"
            for name in names:
                with contextlib.suppress(FileNotFoundError):  # removed since it was listed
                    stamp = os.stat(os.path.join(top, name)).st_mtime
                    found[f"{base}/{name}"] = datetime.fromtimestamp(stamp, UTC)
    return found


def _fsspec_times(store: FsspecStore, folder: str) -> dict[str, datetime]:
    host = f"{store.root}{folder}"
    try:
        with translate_errors(folder):
            raw = store.fs.find(host, withdirs=False, detail=True)
    except PathNotFoundError:
        return {}
    found: dict[str, datetime] = {}
    for name, entry in raw.items():
        stamp = _stamp(entry)
        if stamp is not None:
            found[folder + "/" + _relative(str(name), host)] = stamp
    return found


def _relative(name: str, host: str) -> str:
    name, host = name.strip("/"), host.strip("/")
    return name[len(host) :].strip("/") if name.startswith(host) else name


def _stamp(entry: Mapping[str, Any]) -> datetime | None:
    for key in _TIME_KEYS:
        value = entry.get(key)
        if isinstance(value, datetime):
            return value if value.tzinfo else value.replace(tzinfo=UTC)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return datetime.fromtimestamp(value, UTC)
        if isinstance(value, str) and value:
            with contextlib.suppress(ValueError):
                parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
                return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def prune_empty_folders(workspace: Workspace, folder: str) -> None:
    """Removes ``folder`` and the folders below it that hold nothing, deepest first.

    Only an empty folder is removed, by the backend's own "remove if empty" (a file written
    there meanwhile keeps it); fsspec filesystems (memory, S3) keep no folder without files.
    A failure leaves the folder: an empty folder is harmless.
    """
    store = workspace.store
    if isinstance(store, LocalStore):
        host = store.local_path(folder)
        if host is None or not os.path.isdir(host):
            return
        for top, _dirs, _names in sorted(os.walk(host), key=lambda w: -len(w[0])):
            with contextlib.suppress(OSError):
                os.rmdir(top)  # refuses a folder that is not empty
