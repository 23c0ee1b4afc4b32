"""Where a memory document lives in the workspace, and how it is changed safely.

::

    /memories/<namespace...>/memory.json   the document (the source of truth)
    /memories/<namespace...>/memory.md     its rendering for people, rewritten after it
    /memories/<namespace...>/.versions/000007.json   version 7, kept as it was written

Every change is a read-modify-write through the workspace's compare-and-swap
(:meth:`ctxfs.Workspace.update`): the change is applied to the version read and written only
if the file still has that version, else read and applied again. So two writers (threads,
processes, machines on one S3 bucket) never lose each other's facts, and each write is atomic
(a reader sees the old document or the new one). A file that does not parse stops the change
with :class:`~ctxfs._errors.MemoryFormatError` before anything is written: a hand-edited
memory is never overwritten with less than it held.

Versions: each write is a new revision of the document, recording what made it
(:class:`~ctxfs.memory.Change`: kind, who, from which thread, when), and a copy of it is kept
under ``.versions/`` (written create-only, never changed or removed by ctxfs, except a
copy a failed write left only part of; the agent's tools see ``/memories/`` read-only).
:meth:`MemoryFile.history` lists them and :meth:`MemoryFile.rollback` writes an old
version's content as a new one.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from datetime import datetime

from ctxfs._errors import (
    MemoryFormatError,
    NotADirectoryPathError,
    PathNotFoundError,
    WorkspaceError,
)
from ctxfs._layout import MEMORIES_DIR
from ctxfs._workspace._workspace import Workspace
from ctxfs.memory._document import (
    Change,
    MemoryDocument,
    check_namespace,
    encode_document,
    now_utc,
    parse_document,
    render_markdown,
)

__all__ = ["DOCUMENT_NAME", "MARKDOWN_NAME", "MemoryFile", "memory_path"]

_log = logging.getLogger("ctxfs.memory")

DOCUMENT_NAME = "memory.json"
MARKDOWN_NAME = "memory.md"
VERSIONS_DIR = ".versions"
"""The folder of a namespace's kept versions (a name no namespace segment can have)."""


def memory_path(namespace: tuple[str, ...], name: str = DOCUMENT_NAME) -> str:
    """The virtual path of a namespace's memory file."""
    return "/".join((MEMORIES_DIR, *check_namespace(namespace), name))


class MemoryFile:
    """One namespace's memory document in a workspace: read it, change it, render it.

    Args:
        workspace: The workspace, with ``/memories/`` writable (the SDK's own workspace, not
            the read-only view the agent's tools get).
        namespace: Whose memory: ``("alice",)``, ``("alice", "coder")``...
        clock: The time written as ``updated_at`` (UTC).
    """

    def __init__(
        self,
        workspace: Workspace,
        namespace: tuple[str, ...],
        *,
        clock: Callable[[], datetime] = now_utc,
    ) -> None:
        self._workspace = workspace
        self._namespace = check_namespace(tuple(namespace))
        self._clock = clock

    @property
    def workspace(self) -> Workspace:
        """The workspace the memory lives in."""
        return self._workspace

    @property
    def namespace(self) -> tuple[str, ...]:
        """Whose memory it is."""
        return self._namespace

    @property
    def path(self) -> str:
        """The JSON document."""
        return memory_path(self._namespace)

    @property
    def markdown_path(self) -> str:
        """Its Markdown rendering."""
        return memory_path(self._namespace, MARKDOWN_NAME)

    def empty(self) -> MemoryDocument:
        """The document of a namespace nothing was learned about yet."""
        return MemoryDocument(namespace=self._namespace)

    def load(self) -> MemoryDocument:
        """The stored document, or an empty one if there is none yet.

        Raises:
            MemoryFormatError: The file is malformed (names the file and the field).
            BackendError: The storage could not be asked.
        """
        try:
            data = self._workspace.read_bytes(self.path)
        except (PathNotFoundError, NotADirectoryPathError):
            return self.empty()
        return self._parse(data)

    def _parse(self, data: bytes, path: str | None = None) -> MemoryDocument:
        path = self.path if path is None else path
        document = parse_document(data, path)
        if document.namespace != self._namespace:
            raise MemoryFormatError(
                f"holds the namespace {list(document.namespace)}, expected {list(self._namespace)}",
                path=path,
                field="namespace",
            )
        return document

    def update(
        self,
        change: Callable[[MemoryDocument], MemoryDocument],
        *,
        kind: str = "edit",
        by: str = "",
        thread: str = "",
        note: str | Callable[[], str] = "",
    ) -> MemoryDocument:
        """Applies ``change`` to the stored document and writes the result as a new version,
        by compare-and-swap.

        ``change`` may run more than once (once per conflicting writer): make it a pure
        function of the document it is given. A change that leaves the content as it was
        writes nothing. The new version (revision one more than the one changed) records
        ``kind``, ``by``, ``thread``, the time and ``note`` (called after ``change`` if a
        function) in its :class:`~ctxfs.memory.Change`, and is also kept, immutable, under
        ``.versions/`` (see :meth:`history`). The Markdown rendering is rewritten after the
        document; a failure there (or in keeping the version copy) is not an error of the
        update: the JSON is the memory, and the next update, even one that changes nothing,
        keeps the copy and renders the document again.

        Returns:
            The document as written (or as it was, when nothing changed).

        Raises:
            MemoryFormatError: The stored file is malformed; nothing was written.
            BackendError: The storage failed; the previous version is intact.
        """
        written: list[MemoryDocument] = []
        changed: list[bool] = [False]
        previous: list[MemoryDocument] = []

        def step(old: bytes | None) -> bytes:
            current = self.empty() if old is None else self._parse(old)
            previous[:] = [] if old is None else [current]
            new = change(current)
            if old is not None and new.content() == current.content():
                written[:] = [current]
                changed[0] = False
                return old
            at = self._clock()
            record = Change(
                kind=kind, by=by, thread=thread, at=at, note=note() if callable(note) else note
            )
            new = new.model_copy(
                update={"updated_at": at, "revision": current.revision + 1, "change": record}
            )
            written[:] = [new]
            data = encode_document(new)
            changed[0] = True
            return data

        self._workspace.update(self.path, step)  # a torn write is undone there
        document = written[0]
        if changed[0]:
            for kept in (*previous, document):
                self._keep_version(kept)
            self.render(document)
        else:  # what a failure after an earlier write left behind is put right here too
            self._keep_version(document)
            self._render_if_stale(document)
        return document

    # -- versions ------------------------------------------------------------------------

    def version_path(self, revision: int) -> str:
        """Where version ``revision`` is kept."""
        folder = memory_path(self._namespace, VERSIONS_DIR)
        return f"{folder}/{revision:06d}.json"

    def _keep_version(self, document: MemoryDocument) -> None:
        path = self.version_path(document.revision)
        try:
            if document.revision == 0 and document.content() == self.empty().content():
                return  # nothing was remembered before versions began
            data = encode_document(document)

            def keep(there: bytes | None) -> bytes:
                # versions are immutable: the first copy stays, unless it is part of this
                # one (a write torn by a store without atomic writes)
                torn = there is not None and there != data and data.startswith(there)
                return data if there is None or torn else there

            self._workspace.update(path, keep)
        except WorkspaceError as exc:
            _log.warning(
                "ctxfs memory: version %s not kept (kept at the next update): %s", path, exc
            )

    def history(self) -> list[MemoryDocument]:
        """Every kept version, oldest first (the current one included, always last).

        A version file that does not parse is skipped with a warning naming it.

        Raises:
            MemoryFormatError: The current document is malformed.
        """
        versions: dict[int, MemoryDocument] = {}
        folder = memory_path(self._namespace, VERSIONS_DIR)
        if self._workspace.exists(folder):
            for info in self._workspace.ls(folder):
                if not info.path.endswith(".json"):
                    continue
                try:
                    document = self._parse(self._workspace.read_bytes(info.path), info.path)
                except (MemoryFormatError, PathNotFoundError) as exc:
                    _log.warning("ctxfs memory: version %s is skipped: %s", info.path, exc)
                    continue
                versions.setdefault(document.revision, document)
        current = self.load()
        if current.revision or current.content() != self.empty().content():
            versions[current.revision] = current
        return [versions[r] for r in sorted(versions) if r <= current.revision]

    def version(self, revision: int) -> MemoryDocument:
        """Version ``revision`` of the document.

        Raises:
            LookupError: There is no such version (the message lists those there are).
        """
        if revision >= 0:
            try:
                kept = self._parse(self._workspace.read_bytes(self.version_path(revision)))
            except (MemoryFormatError, PathNotFoundError, NotADirectoryPathError):
                pass  # not kept (yet), or broken: the history says what there is
            else:
                if kept.revision == revision:
                    return kept
        history = self.history()
        found = next((d for d in history if d.revision == revision), None)
        if found is None:
            there = ", ".join(str(d.revision) for d in history) or "none"
            raise LookupError(f"{self.path} has no version {revision} (versions: {there})")
        return found

    def rollback(self, revision: int, *, by: str = "") -> MemoryDocument:
        """Writes a new version remembering what version ``revision`` did (its summaries and
        facts; the threads learned from stay). No version is ever removed: a rollback can be
        rolled back.

        Raises:
            LookupError: There is no such version.
        """
        target = self.version(revision)
        restored = {"user": target.user, "history": target.history, "facts": target.facts}
        return self.update(
            lambda current: current.model_copy(update=restored),
            kind="rollback",
            by=by,
            note=f"back to version {revision}",
        )

    def render(self, document: MemoryDocument | None = None) -> bool:
        """Rewrites the Markdown rendering (of ``document``, or of the stored one).

        Returns:
            Whether it was written (a storage failure is swallowed: the JSON is the memory,
            and the next update renders it again).
        """
        try:
            document = self.load() if document is None else document
            self._workspace.write_text(self.markdown_path, render_markdown(document))
        except WorkspaceError:
            return False
        return True

    def _render_if_stale(self, document: MemoryDocument) -> None:
        text = render_markdown(document)
        try:
            if self._workspace.read_text(self.markdown_path) == text:
                return
        except WorkspaceError:
            pass  # missing, or not text: written again below
        with contextlib.suppress(WorkspaceError):
            self._workspace.write_text(self.markdown_path, text)

    def replace(self, document: MemoryDocument) -> MemoryDocument:
        """Writes ``document`` over whatever is stored (by compare-and-swap too).

        Raises:
            ValueError: ``document`` belongs to another namespace.
        """
        if document.namespace != self._namespace:
            raise ValueError(
                f"the document is for {document.namespace}, this memory is {self._namespace}"
            )
        return self.update(lambda _current: document, kind="replace")
