"""Where a memory document lives in the workspace, and how it is changed safely.

::

    /memories/<namespace...>/memory.json   the document (the source of truth)
    /memories/<namespace...>/memory.md     its rendering for people, rewritten after it

Every change is a read-modify-write through the workspace's compare-and-swap
(:meth:`ctxfs.Workspace.update`): the change is applied to the version read and written only
if the file still has that version, else read and applied again. So two writers (threads,
processes, machines on one S3 bucket) never lose each other's facts, and each write is atomic
(a reader sees the old document or the new one). A file that does not parse stops the change
with :class:`~ctxfs._errors.MemoryFormatError` before anything is written: a hand-edited
memory is never overwritten with less than it held.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime

from ctxfs._errors import (
    BackendError,
    MemoryFormatError,
    NotADirectoryPathError,
    PathNotFoundError,
    WorkspaceError,
)
from ctxfs._layout import MEMORIES_DIR
from ctxfs._workspace._workspace import Workspace
from ctxfs.memory._document import (
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

    def _parse(self, data: bytes) -> MemoryDocument:
        document = parse_document(data, self.path)
        if document.namespace != self._namespace:
            raise MemoryFormatError(
                f"holds the namespace {list(document.namespace)}, expected {list(self._namespace)}",
                path=self.path,
                field="namespace",
            )
        return document

    def update(self, change: Callable[[MemoryDocument], MemoryDocument]) -> MemoryDocument:
        """Applies ``change`` to the stored document and writes the result, by compare-and-swap.

        ``change`` may run more than once (once per conflicting writer): make it a pure
        function of the document it is given. The Markdown rendering is rewritten after the
        document; a failure there is not an error of the update (the JSON is the memory).

        Returns:
            The document as written.

        Raises:
            MemoryFormatError: The stored file is malformed; nothing was written.
            BackendError: The storage failed; the previous version is intact.
        """
        written: list[MemoryDocument] = []
        attempt: list[tuple[bytes | None, bytes]] = []

        def step(old: bytes | None) -> bytes:
            current = self.empty() if old is None else self._parse(old)
            new = change(current).model_copy(update={"updated_at": self._clock()})
            written[:] = [new]
            data = encode_document(new)
            attempt[:] = [(old, data)]
            return data

        try:
            self._workspace.update(self.path, step)
        except BackendError:
            if attempt:
                self._undo_torn_write(*attempt[0])
            raise
        document = written[0]
        self.render(document)
        return document

    def _undo_torn_write(self, old: bytes | None, new: bytes) -> None:
        """Puts the previous version back if a failed write left part of the new one.

        A store's writes are atomic by contract; a backend that breaks it mid-way (what
        :class:`~ctxfs.testing.FaultyStore` calls a torn write) leaves a strict prefix of
        what was being written. Only that, recognised exactly, is replaced by the version it
        overwrote; anything else (the whole new document, another writer's) stays.
        """
        try:
            data, version = self._workspace.read_versioned(self.path)
        except WorkspaceError:
            return  # gone, or the storage still fails: nothing to put back now
        if data in (old, new) or not new.startswith(data):
            return
        try:
            if old is None:
                self._workspace.rm(self.path)
            else:
                self._workspace.write_bytes(self.path, old, if_version=version)
        except WorkspaceError:
            _log.warning(
                "ctxfs memory: %s holds part of a failed write and could not be restored",
                self.path,
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

    def replace(self, document: MemoryDocument) -> MemoryDocument:
        """Writes ``document`` over whatever is stored (by compare-and-swap too).

        Raises:
            ValueError: ``document`` belongs to another namespace.
        """
        if document.namespace != self._namespace:
            raise ValueError(
                f"the document is for {document.namespace}, this memory is {self._namespace}"
            )
        return self.update(lambda _current: document)
