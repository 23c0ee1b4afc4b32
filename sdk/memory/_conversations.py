"""The conversations a memory took part in, kept so the next session can recall them.

Archived transcripts (``/transcripts/``) hold only what compaction moved out of a context
window, so a session that never compacted leaves nothing there. The memory therefore keeps
the conversational part of each of its threads (the user's messages and the assistant's
final answers, no tool traffic, no ctxfs summaries: what :func:`conversational` keeps) in
one JSON-lines file per thread::

    /memories/<namespace...>/.conversations/<thread>.jsonl    {"role": "user", "text": ...}

The folder starts with a dot, which no namespace segment may, so it never collides with a
nested namespace. Lines are appended by compare-and-swap as turns are recorded, each message
once (see :class:`~ctxfs.memory._queue.SeenMessages`). Retrieval searches these files with
the archived transcripts (a passage archived too is searched once).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage

from ctxfs._errors import PathNotFoundError, WorkspaceError
from ctxfs._json import loads_bounded
from ctxfs._layout import MEMORIES_DIR, safe_name
from ctxfs._messages import message_text
from ctxfs._workspace._workspace import Workspace
from ctxfs.memory._document import check_namespace
from ctxfs.memory._queue import SeenMessages, conversational

__all__ = [
    "CONVERSATIONS_DIR",
    "ConversationLine",
    "ConversationLog",
    "conversation_files",
    "conversation_path",
    "read_conversation",
]

_log = logging.getLogger("ctxfs.memory")

CONVERSATIONS_DIR = ".conversations"
"""The folder of a namespace's conversation logs (a name no namespace segment can have)."""


def conversation_path(namespace: tuple[str, ...], thread_id: str) -> str:
    """The log of ``thread_id`` in ``namespace``'s memory (named like its transcripts)."""
    folder = "/".join((MEMORIES_DIR, *check_namespace(namespace), CONVERSATIONS_DIR))
    return f"{folder}/{safe_name(thread_id)}.jsonl"


@dataclass(frozen=True, slots=True)
class ConversationLine:
    """One logged message: ``role`` is ``"user"`` or ``"assistant"``."""

    role: str
    text: str


def _encode(messages: Sequence[BaseMessage]) -> bytes:
    lines = []
    for message in messages:
        role = "user" if isinstance(message, HumanMessage) else "assistant"
        text = message_text(message).encode("utf-8", "replace").decode("utf-8")
        lines.append(json.dumps({"role": role, "text": text}, ensure_ascii=False) + "\n")
    return "".join(lines).encode("utf-8")


def _appended(old: bytes | None, data: bytes) -> bytes:
    """``data`` after the lines of ``old``: on a line of its own even when the last line of
    ``old`` lost its newline (cut short, edited by hand), or the two would run into one line
    that reads as neither."""
    if old and not old.endswith(b"\n"):
        return old + b"\n" + data
    return (old or b"") + data


def read_conversation(workspace: Workspace, path: str) -> list[ConversationLine]:
    """The lines of a log; a line that is not one (a hand edit, JSON nested too deeply) is
    skipped with a warning naming the file."""
    try:
        data = workspace.read_bytes(path)
    except PathNotFoundError:
        return []
    lines: list[ConversationLine] = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = loads_bounded(raw.decode("utf-8"))
            if not isinstance(value, dict):
                raise ValueError("not a JSON object")
            role, text = value.get("role"), value.get("text")
            if role not in ("user", "assistant") or not isinstance(text, str):
                raise ValueError("needs a role (user or assistant) and a text")
        except ValueError as exc:
            _log.warning("ctxfs memory: %s line %d is skipped: %s", path, number, exc)
            continue
        lines.append(ConversationLine(role, text))
    return lines


def conversation_files(workspace: Workspace, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    """The conversation logs of every namespace under ``prefix``."""
    base = "/".join((MEMORIES_DIR, *prefix))
    if not workspace.exists(base):
        return
    pattern = f"**/{CONVERSATIONS_DIR}/*.jsonl"
    yield from workspace.glob(pattern, base, limit=1_000_000).paths


def namespace_of(path: str) -> tuple[str, ...]:
    """The namespace whose log ``path`` is."""
    parts = path[len(MEMORIES_DIR) + 1 :].split("/")
    return tuple(parts[:-2])


class ConversationLog:
    """Appends the new conversational messages of each thread to its log.

    Thread-safe. A failure to write is logged on the ``ctxfs.memory`` logger and forgotten
    (the agent is never stopped by its memory); the messages it could not write are offered
    again with the next turn's state.

    Args:
        workspace: The workspace, with ``/memories/`` writable.
        namespace: Whose memory the conversations are part of.
    """

    def __init__(self, workspace: Workspace, namespace: tuple[str, ...]) -> None:
        self._workspace = workspace
        self._namespace = check_namespace(namespace)
        self._lock = threading.Lock()
        self._seen = SeenMessages()

    def path(self, thread_id: str) -> str:
        """The log of ``thread_id``."""
        return conversation_path(self._namespace, thread_id)

    def record(self, thread_id: str, messages: Sequence[BaseMessage]) -> int:
        """Appends the messages of ``messages`` not logged before.

        Returns:
            How many were appended (0 when the write failed).
        """
        with self._lock:
            new = self._seen.take(thread_id, conversational(messages))
            if not new:
                return 0
            data = _encode(new)
            try:
                self._workspace.update(self.path(thread_id), lambda old: _appended(old, data))
            except (WorkspaceError, OSError) as exc:
                self._seen.forget(thread_id, new)
                _log.warning("ctxfs memory [%s]: conversation not logged: %s", thread_id, exc)
                return 0
            return len(new)
