"""An outer middleware's per-request edit, carried over onto the compacted state.

A middleware placed outside :class:`~ctxfs.integrations.langchain.ContextMiddleware` may edit
the messages of one request without touching the graph state (LangChain's
``ContextEditingMiddleware`` clears old tool results that way, on a deep copy). ctxfs compacts
the state's own messages, so what it archives and writes back is what the thread holds, and
the model is sent that compacted state with the edit laid over it: see :func:`with_edits`.

One edit is LangChain's own and is written to the state: ``create_agent`` answers a tool call
whose arguments were malformed (an ``invalid_tool_calls`` entry without a result) with an
error result, and its model node then writes the whole state again, the repaired list before
the answer after a ``RemoveMessage(REMOVE_ALL_MESSAGES)``. See :func:`repaired_state` and
:func:`with_repairs`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from langchain_core.messages import BaseMessage

from ctxfs._messages import same_objects

__all__ = ["added_tokens", "repaired_state", "state_messages", "with_edits", "with_repairs"]


def state_messages(request: Sequence[BaseMessage], state: object) -> Sequence[BaseMessage] | None:
    """The state's messages when the request's differ from them and can be matched by id.

    ``None`` when the request holds the state's very messages (nothing to carry over), when
    there is no state to read, or when a state message has no id or shares one (then the
    edit cannot be told apart from the message, and the request is compacted as it is).
    """
    messages = state.get("messages") if isinstance(state, dict) else None
    if not isinstance(messages, list) or same_objects(request, messages):
        return None
    ids = [m.id for m in messages if isinstance(m, BaseMessage)]
    if len(ids) != len(messages) or None in ids or len(set(ids)) != len(ids):
        return None
    return messages


def with_edits(
    edited: Sequence[BaseMessage],
    state: Sequence[BaseMessage],
    compacted: Sequence[BaseMessage],
) -> list[BaseMessage]:
    """The compacted state with an outer middleware's edit of one request laid over it.

    ``edited`` is the request that middleware made from ``state``; ``compacted`` is what
    ctxfs made of ``state``. For each message of ``compacted``:

    - kept unchanged by ctxfs: the request's version of it (the outer edit), or nothing if
      the outer middleware left it out of the request;
    - replaced by ctxfs (a pointer, same id): ctxfs's version, unless the outer middleware
      left it out;
    - new (a summary): as it is.

    A message the outer middleware added (an id the state does not hold) keeps its place
    after the state message it followed in the request, or before the next one ctxfs kept
    when that one was archived.
    """
    index = {m.id: i for i, m in enumerate(state)}
    edited_by_id = {m.id: m for m in edited if m.id in index}
    added: list[tuple[int, BaseMessage]] = []  # (index of the state message it follows, it)
    anchor = -1
    for message in edited:
        place = index.get(message.id) if message.id is not None else None
        if place is None:
            added.append((anchor, message))
        else:
            anchor = place
    out: list[BaseMessage] = []
    waiting = sorted(added, key=lambda item: item[0])  # stable: the request's order
    for message in compacted:
        place = index.get(message.id) if message.id is not None else None
        if place is None:
            out.append(message)  # ctxfs's own: a summary, a pinned message
            continue
        while waiting and waiting[0][0] < place:
            out.append(waiting.pop(0)[1])
        request_version = edited_by_id.get(message.id)
        if request_version is None:
            continue  # the outer middleware left it out of this request
        out.append(request_version if message is state[place] else message)
        while waiting and waiting[0][0] == place:
            out.append(waiting.pop(0)[1])
    out.extend(message for _, message in waiting)
    return out


def added_tokens(
    edited: Sequence[BaseMessage],
    state: Sequence[BaseMessage],
    count: Callable[[BaseMessage], int],
) -> int:
    """Tokens an outer middleware's edit adds to a request: the messages it inserted, and
    what a copy it edited holds beyond the state's message. What it cleared or left out is
    not credited: ctxfs compacts the state, which still holds it, and sends the edit over
    what it made of it, so only additions can make the request larger than ctxfs counted.
    """
    by_id = {m.id: m for m in state if m.id is not None}
    added = 0
    for message in edited:
        original = by_id.get(message.id) if message.id is not None else None
        if original is None:
            added += count(message)
        elif message is not original:
            added += max(0, count(message) - count(original))
    return added


def repaired_state(state: Sequence[BaseMessage]) -> list[BaseMessage] | None:
    """The state as ``create_agent``'s model node writes it back before its answer, when it
    answers botched tool calls with error results; ``None`` when it writes only the answer.

    What the node writes then replaces the whole state (a remove-all first), so a change
    written by id in the same update (a replacement, a ``RemoveMessage``) is no longer
    applied by the reducer but kept as a message: a compaction must be written as a rebuild
    of its own (:func:`with_repairs`), which comes after it and so wins.
    """
    try:
        from langchain.agents.factory import _patch_invalid_tool_calls
    except ImportError:  # pragma: no cover - a LangChain that does not repair
        return None
    repaired: list[BaseMessage] = list(_patch_invalid_tool_calls(cast(Any, state)))
    return None if repaired == list(state) else repaired


def with_repairs(
    compacted: Sequence[BaseMessage],
    repaired: Sequence[BaseMessage],
    state: Sequence[BaseMessage],
) -> list[BaseMessage]:
    """``compacted`` (what ctxfs made of ``state``) with the messages ``repaired`` adds to
    ``state`` (LangChain's error results), each right after the message it follows there
    (its call), as LangChain puts it; one whose call was archived is left out, as LangChain
    leaves out a result for a call that is not there."""
    held = {id(message) for message in state}
    following: dict[str | None, list[BaseMessage]] = {}
    anchor: str | None = None
    for message in repaired:
        if id(message) in held:
            anchor = message.id
        elif anchor is not None:
            following.setdefault(anchor, []).append(message)
    out: list[BaseMessage] = []
    for message in compacted:
        out.append(message)
        if message.id is not None:
            out += following.pop(message.id, [])
    return out
