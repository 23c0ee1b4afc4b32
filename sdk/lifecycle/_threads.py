"""The threads of a workspace: their folders, sizes, last activity, and sub-agent children.

A thread owns one folder in each of the SDK's areas (see :mod:`ctxfs._layout`)::

    /tool_results/<file_name(thread)>/...   offloaded tool results
    /tool_inputs/<file_name(thread)>/...    offloaded tool inputs
    /transcripts/<safe_name(thread)>/...    archived segments, their index, a sub-task record

The transcript folder's name (:attr:`ThreadInfo.key`) is computable from either of the
other two, so the folders of a thread are matched without knowing its id: a results folder
named by the plain id ``main`` belongs with ``/transcripts/<safe_name("main")>``, and a
hashed one (``main_task-call_1-<16 hex>``) is the transcript folder's name itself. The id is
read where ctxfs wrote it: the transcript index's ``thread_id``, the sub-task record's, or the
plain folder name. A sub-task's record (``task.json``, see :mod:`ctxfs.subagents`) names its
parent thread: the sub-agent thread is listed under it, and is collected with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from ctxfs._errors import PathNotFoundError
from ctxfs._json import loads_bounded
from ctxfs._layout import INPUTS_DIR, RESULTS_DIR, TRANSCRIPTS_DIR, file_name, safe_name
from ctxfs._workspace._workspace import Workspace
from ctxfs.lifecycle._files import FileLister, StampedFile, list_files

__all__ = ["JOURNAL_NAME", "THREAD_AREAS", "Scan", "ThreadInfo", "list_threads", "scan"]

THREAD_AREAS: tuple[str, ...] = (RESULTS_DIR, INPUTS_DIR, TRANSCRIPTS_DIR)
"""The areas whose folders belong to threads (``/memories`` belongs to nobody)."""

JOURNAL_NAME = "gc.json"
"""The garbage collector's journal in a thread's transcript folder (see
:mod:`ctxfs.lifecycle._collect`); not part of the thread."""

_TASK_RECORD = "task.json"
_INDEX = "index.json"
_TASK_ID = re.compile(r"(.+)/task-[^/]+")


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadInfo:
    """One thread of a workspace, with the sub-agent threads it started.

    Attributes:
        key: The name of its transcript folder (:func:`ctxfs._layout.safe_name` of its id),
            which identifies it even when the id itself is lost.
        thread_id: Its id, or ``None`` when no file says it (only a hashed folder is left).
        parent_id: For a sub-agent thread: the thread that handed it its task.
        subagent: For a sub-agent thread: the sub-agent's name.
        status: For a sub-agent thread: ``running``, or how its task ended.
        files: Its own files in the three areas (not its children's), sorted by path.
        children: The sub-agent threads it started, sorted by name.
    """

    key: str
    thread_id: str | None
    parent_id: str | None = None
    subagent: str | None = None
    status: str | None = None
    files: tuple[StampedFile, ...] = ()
    children: tuple[ThreadInfo, ...] = field(default=())

    @property
    def name(self) -> str:
        """Its id, or its folder name when the id is unknown."""
        return self.thread_id if self.thread_id is not None else self.key

    @property
    def bytes(self) -> int:
        """Bytes of its own files."""
        return sum(f.size for f in self.files)

    @property
    def last_activity(self) -> datetime | None:
        """When one of its own files was last written (``None``: no files, or the time of
        one of them is unknown, which may be the latest)."""
        stamps = [f.modified for f in self.files]
        if not stamps or any(stamp is None for stamp in stamps):
            return None
        return max(stamp for stamp in stamps if stamp is not None)

    @property
    def total_bytes(self) -> int:
        """Bytes of its files and of its sub-agent threads' files."""
        return sum(thread.bytes for thread in self.walk())

    @property
    def total_files(self) -> int:
        """How many files it and its sub-agent threads hold."""
        return sum(len(thread.files) for thread in self.walk())

    @property
    def family_activity(self) -> datetime | None:
        """The latest activity of it and its sub-agent threads (``None``: no files, or the
        time of one of them is unknown)."""
        holding = [t for t in self.walk() if t.files]
        stamps = [t.last_activity for t in holding]
        if not stamps or any(stamp is None for stamp in stamps):
            return None
        return max(stamp for stamp in stamps if stamp is not None)

    def walk(self) -> Iterator[ThreadInfo]:
        """It, then its sub-agent threads, depth first."""
        yield self
        for child in self.children:
            yield from child.walk()

    def folders(self) -> tuple[str, str, str]:
        """Its results, inputs and transcript folders (whether they exist or not)."""
        return thread_folders(self.key, self.thread_id)


def thread_folders(key: str, thread_id: str | None) -> tuple[str, str, str]:
    """The results, inputs and transcript folders of the thread with this key (and id)."""
    named = file_name(thread_id) if thread_id is not None else key
    return f"{RESULTS_DIR}/{named}", f"{INPUTS_DIR}/{named}", f"{TRANSCRIPTS_DIR}/{key}"


def key_of_folder(area: str, folder: str) -> tuple[str, str | None]:
    """The key of the thread owning ``/<area>/<folder>``, and its id if the name says it."""
    if area == TRANSCRIPTS_DIR:
        return folder, None
    if file_name(folder) == folder:  # a plain id, kept as it is
        return safe_name(folder), folder
    return folder, None


@dataclass(frozen=True, slots=True)
class Scan:
    """A workspace's threads as one listing found them.

    Attributes:
        roots: Threads that are nobody's sub-agent thread, each with its children.
        journals: The garbage collector's journals, by the key of the thread they are in.
        bytes: Bytes of every thread's files.
    """

    roots: tuple[ThreadInfo, ...]
    journals: dict[str, StampedFile]

    @property
    def bytes(self) -> int:
        """Bytes of every thread's files."""
        return sum(root.total_bytes for root in self.roots)

    def threads(self) -> Iterator[ThreadInfo]:
        """Every thread, roots and sub-agent threads."""
        for root in self.roots:
            yield from root.walk()


@dataclass
class _Found:
    key: str
    thread_id: str | None = None
    parent_id: str | None = None
    subagent: str | None = None
    status: str | None = None
    files: list[StampedFile] = field(default_factory=list)


def scan(workspace: Workspace, *, files: FileLister | None = None) -> Scan:
    """Lists the threads of ``workspace``: one listing per area, and each transcript
    folder's index head and sub-task record read for ids and parents.

    Raises:
        WorkspaceError: The storage could not be asked.
    """
    lister = files or list_files
    found: dict[str, _Found] = {}
    journals: dict[str, StampedFile] = {}
    for area in THREAD_AREAS:
        for stamped in lister(workspace, area):
            folder, _, rest = stamped.path[len(area) + 1 :].partition("/")
            if not rest:
                continue  # a file at the top of an area belongs to no thread
            key, thread_id = key_of_folder(area, folder)
            if area == TRANSCRIPTS_DIR and rest == JOURNAL_NAME:
                journals[key] = stamped
                continue
            entry = found.setdefault(key, _Found(key))
            entry.thread_id = entry.thread_id or thread_id
            entry.files.append(stamped)
    for entry in found.values():
        _read_identity(workspace, entry)
    for key in journals:
        found.setdefault(key, _Found(key))
    return Scan(roots=_tree(found), journals=journals)


def _read_identity(workspace: Workspace, entry: _Found) -> None:
    """Fills in the id (and parent) from the files ctxfs wrote in the transcript folder."""
    folder = f"{TRANSCRIPTS_DIR}/{entry.key}"
    names = {f.path for f in entry.files}
    record = _json_of(workspace, f"{folder}/{_TASK_RECORD}", names)
    if isinstance(record, dict) and record.get("format") == "ctxfs-subagent-task":
        _set_id(entry, record.get("thread_id"))
        parent = record.get("parent_thread_id")
        entry.parent_id = parent if isinstance(parent, str) else None
        for name in ("subagent", "status"):
            value = record.get(name)
            setattr(entry, name, value if isinstance(value, str) else None)
    if entry.thread_id is None:
        index = _json_of(workspace, f"{folder}/{_INDEX}", names)
        if isinstance(index, dict):
            _set_id(entry, index.get("thread_id"))
    if entry.parent_id is None and entry.thread_id is not None:
        parent = _TASK_ID.fullmatch(entry.thread_id)
        entry.parent_id = parent.group(1) if parent is not None else None


def _set_id(entry: _Found, value: object) -> None:
    # an id is taken only if it names this very folder (a copied file names another)
    if isinstance(value, str) and safe_name(value) == entry.key:
        entry.thread_id = value


def _json_of(workspace: Workspace, path: str, names: set[str]) -> object:
    if path not in names:
        return None
    try:
        return loads_bounded(workspace.read_bytes(path))
    except PathNotFoundError:
        return None  # removed since it was listed
    except (ValueError, UnicodeDecodeError):
        return None  # torn: the id stays unknown


def _tree(found: dict[str, _Found]) -> tuple[ThreadInfo, ...]:
    """Hangs each sub-agent thread under its parent (made up when it has no files)."""
    parent_of: dict[str, str] = {}
    for entry in list(found.values()):
        if entry.parent_id is None:
            continue
        key = safe_name(entry.parent_id)
        if key == entry.key:
            continue
        parent = found.setdefault(key, _Found(key))
        _set_id(parent, entry.parent_id)
        parent_of[entry.key] = key
    for key in list(parent_of):  # a cycle of records is cut where it closes
        seen, at = {key}, parent_of[key]
        while at in parent_of and at not in seen:
            seen.add(at)
            at = parent_of[at]
        if at in seen:
            del parent_of[key]
    children: dict[str, list[str]] = {}
    for child, above in parent_of.items():
        children.setdefault(above, []).append(child)

    def build(key: str) -> ThreadInfo:
        entry = found[key]
        kids = sorted((build(k) for k in children.get(key, ())), key=lambda t: t.name)
        return ThreadInfo(
            key=key,
            thread_id=entry.thread_id,
            parent_id=entry.parent_id if key in parent_of else None,
            subagent=entry.subagent,
            status=entry.status,
            files=tuple(sorted(entry.files, key=lambda f: f.path)),
            children=tuple(kids),
        )

    roots = [build(key) for key in found if key not in parent_of]
    return tuple(sorted(roots, key=lambda t: t.name))


def list_threads(
    workspace: Workspace, *, files: FileLister | None = None
) -> tuple[ThreadInfo, ...]:
    """The threads of ``workspace``, each with its sub-agent threads as children.

    Example:
        >>> from ctxfs import Workspace
        >>> from ctxfs.lifecycle import list_threads
        >>> ws = Workspace("memory://list-threads")
        >>> _ = ws.write_text("/tool_results/main/call_1.txt", "x" * 100)
        >>> [(t.name, t.total_bytes) for t in list_threads(ws)]
        [('main', 100)]

    Args:
        workspace: The workspace (read-only is enough).
        files: Lists a folder's files with their times (default :func:`list_files`).

    Raises:
        WorkspaceError: The storage could not be asked.
    """
    return scan(workspace, files=files).roots


def flatten(roots: Sequence[ThreadInfo]) -> list[ThreadInfo]:
    """Every thread of ``roots`` and below, depth first."""
    return [thread for root in roots for thread in root.walk()]
