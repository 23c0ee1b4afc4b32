"""Checking the promise: everything that left the context reads back byte-exact.

:func:`restore_messages` rebuilds a conversation from the workspace (the archived transcript
segments, then the messages still in the context with their pointers resolved) and
:func:`check_recovery` compares it with the run that was replayed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage

from ctxfs._archive._transcripts import TranscriptArchive
from ctxfs._pointers._resolve import resolve_pointers
from ctxfs._replay._run import ReplayResult
from ctxfs._summary._message import is_summary
from ctxfs._summary._pins import is_pinned
from ctxfs._workspace._workspace import Workspace

__all__ = ["Recovery", "check_recovery", "restore_messages"]


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

    The rebuilt run is the archived transcript segments followed by the messages still in
    the context (summaries left out), with every pointer resolved by reading the file it
    names. A message counts as removed when the context no longer holds it as it was.

    Args:
        result: A replay.
        workspace: The workspace the replay wrote to.

    Raises:
        WorkspaceError: The archive or an offloaded file could not be read.
    """
    rebuilt = restore_messages(result.context, workspace, thread_id=result.thread_id)
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
        back = rebuilt.get(original.id)
        if back is not None and _text(back) == text:
            recovered += size
        else:
            lost.append(str(original.id))
    return Recovery(
        removed_messages=removed,
        removed_bytes=removed_bytes,
        recovered_bytes=recovered,
        lost=tuple(lost),
    )


def restore_messages(
    context: Sequence[BaseMessage], workspace: Workspace, *, thread_id: str
) -> dict[str | None, BaseMessage]:
    """Reads a conversation back from the workspace, as it was before ctxfs touched it.

    The messages are the archived transcript segments of ``thread_id`` followed by the
    messages of ``context`` (summaries left out), each with every ctxfs pointer in its result
    or tool-call arguments replaced by the text of the file it names.

    Args:
        context: The history as ctxfs holds it now.
        workspace: Where the engine wrote.
        thread_id: The conversation the transcripts are filed under.

    Returns:
        The restored messages by id (a later message with the same id wins).

    Raises:
        WorkspaceError: The archive or an offloaded file could not be read.
    """
    archived = TranscriptArchive(workspace, thread_id).read_all()
    kept = [m for m in context if not is_summary(m) and not is_pinned(m)]
    restored = resolve_pointers([*archived, *kept], workspace, thread_id=thread_id)
    return {m.id: m for m in restored}


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
