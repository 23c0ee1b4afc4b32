"""Checking the promise: everything that left the context reads back byte-exact.

:func:`restore_history` rebuilds a conversation from the workspace (the archived transcript
segments of its branch, then the messages still in the context with their pointers
resolved), :func:`restore_messages` gives them by id, and
:func:`check_recovery` compares it with the run that was replayed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage

from ctxfs._archive._branches import chain
from ctxfs._archive._segment import segment_number
from ctxfs._archive._transcripts import TranscriptArchive
from ctxfs._pointers._resolve import resolve_pointers
from ctxfs._replay._run import ReplayResult
from ctxfs._summary._message import is_summary, summary_state
from ctxfs._summary._pins import is_pinned
from ctxfs._workspace._workspace import Workspace

__all__ = ["Recovery", "check_recovery", "restore_history", "restore_messages"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Recovery:
    """How much of what left the context reads back byte-exact from the workspace.

    Attributes:
        removed_messages: Messages no longer in the context as they were (archived, or with a
            result or argument replaced by a pointer).
        removed_bytes: UTF-8 bytes of their text and tool-call arguments.
        recovered_bytes: How many of those bytes read back byte-exact.
        lost: Ids of the messages that did not come back exactly.
    """

    removed_messages: int
    removed_bytes: int
    recovered_bytes: int
    lost: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Whether everything removed came back byte-exact."""
        return not self.lost and self.recovered_bytes == self.removed_bytes


def check_recovery(result: ReplayResult, workspace: Workspace) -> Recovery:
    """Rebuilds the original run from the workspace and compares it with the trace.

    The rebuilt run is :func:`restore_history`: the archived transcript segments of the
    context's branch followed by the messages still in the context (summaries left out),
    with every pointer resolved by reading the file it names. A message counts as removed
    when the context no longer holds it as it was, and as recovered when a rebuilt message
    with its id holds it byte-exact.

    Args:
        result: A replay.
        workspace: The workspace the replay wrote to.

    Raises:
        WorkspaceError: The archive or an offloaded file could not be read.
    """
    rebuilt: dict[str | None, set[str]] = {}
    for message in restore_history(result.context, workspace, thread_id=result.thread_id):
        rebuilt.setdefault(message.id, set()).add(_text(message))  # an id may repeat
    in_context = {m.id: _text(m) for m in result.context}
    removed = removed_bytes = recovered = 0
    lost: list[str] = []
    for original in result.history:
        text = _text(original)
        if in_context.get(original.id) == text:
            continue  # still in the context as it was: nothing removed
        size = len(text.encode("utf-8", "surrogatepass"))
        removed += 1
        removed_bytes += size
        if text in rebuilt.get(original.id, ()):
            recovered += size
        else:
            lost.append(str(original.id))
    return Recovery(
        removed_messages=removed,
        removed_bytes=removed_bytes,
        recovered_bytes=recovered,
        lost=tuple(lost),
    )


def restore_history(
    context: Sequence[BaseMessage], workspace: Workspace, *, thread_id: str
) -> list[BaseMessage]:
    """Reads a conversation back from the workspace, in order, as it was before ctxfs
    touched it.

    The messages are those ``context`` holds before its summary (the system prompt, which
    is never archived), then the archived transcript segments of the history ``context``
    is on (the branch that ends at the last of ``thread_id``'s segments its summary names;
    none when it holds no summary; every segment of every branch when ``context`` is empty),
    then the rest of ``context`` (summaries left out), each with every ctxfs pointer in
    its result or tool-call arguments replaced by the text of the file it names. Every
    message is there, with or without an id: a thread that forked (time travel, a retried
    turn) does not bring in another branch's messages.

    Args:
        context: The history as ctxfs holds it now.
        workspace: Where the engine wrote.
        thread_id: The conversation the transcripts are filed under.

    Raises:
        WorkspaceError: The archive or an offloaded file could not be read, or a segment
            the summary names has no record either.
    """
    archive = TranscriptArchive(workspace, thread_id)
    named = _named_segments(context)
    if not context:
        segments = archive.segments()
    elif named is None:
        segments = ()  # no summary: nothing of this history was archived
    else:
        own = [path for path in named if path.startswith(archive.directory + "/")]
        numbers = [n for n in map(segment_number, own) if n is not None]
        segments = chain(archive.segments(expected=own), numbers[-1]) if numbers else ()
    archived = [m for segment in segments for m in archive.read_segment(segment)]
    # What sits before the summary (the system prompt, never archived) came before what it
    # replaced: it goes first, then the archived messages, then the rest of the context.
    start = next((n for n, m in enumerate(context) if is_summary(m)), 0)
    kept = [m for m in context if not is_summary(m) and not is_pinned(m)]
    head = [m for m in context[:start] if not is_pinned(m)]
    ordered = [*head, *archived, *kept[len(head) :]]
    return resolve_pointers(ordered, workspace, thread_id=thread_id)


def restore_messages(
    context: Sequence[BaseMessage], workspace: Workspace, *, thread_id: str
) -> dict[str | None, BaseMessage]:
    """The messages :func:`restore_history` gives, by id.

    A later message with the same id wins (the context's over an archived one).

    Raises:
        ValueError: A message has no id (:func:`restore_history` gives every one, in
            order).
        WorkspaceError: As for :func:`restore_history`.
    """
    restored = restore_history(context, workspace, thread_id=thread_id)
    missing = sum(1 for m in restored if m.id is None)
    if missing:
        raise ValueError(
            f"{missing} of the {len(restored)} restored messages have no id, so they cannot "
            "be given by id; restore_history gives every message, in order"
        )
    return {m.id: m for m in restored}


def _named_segments(context: Sequence[BaseMessage]) -> tuple[str, ...] | None:
    """The transcript segments the summary in ``context`` names (``None``: it holds none)."""
    for message in context:
        state = summary_state(message)
        if state is not None:
            return tuple(state.transcripts)
    return None


def _text(message: BaseMessage) -> str:
    """What must come back byte-exact: the content and the tool-call arguments, botched
    calls' included."""
    content = message.content
    parts = [content if isinstance(content, str) else json.dumps(content, sort_keys=True)]
    if isinstance(message, AIMessage):
        parts += [
            json.dumps(c["args"], ensure_ascii=False, sort_keys=True) for c in message.tool_calls
        ]
        # a botched call's arguments as the model wrote them (moved out when too large)
        parts += [str(c.get("args")) for c in message.invalid_tool_calls]
    return "\x00".join(parts)
