"""Token counts that survive a checkpoint reload, so a long thread is not recounted per turn.

The engine's counters cache counts per message *object*. A graph with a checkpointer
rebuilds every message object from the checkpoint at each ``invoke``, so on a 2,000-message
thread every user turn would tokenize the whole history again. :class:`IdCachedCounter` adds
a second cache keyed on the message *id* (which langgraph's ``add_messages`` gives every
message), checked against a snapshot of what was counted (type, content, tool calls): a
message with the same id but different content is recounted, never served a stale count.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from ctxfs.tokens import TokenCounter

__all__ = ["IdCachedCounter"]

_Snapshot = tuple[type, object, object, object]


def _snapshot(message: BaseMessage) -> _Snapshot:
    content = message.content
    if not isinstance(content, str):
        content = copy.deepcopy(content)
    calls: object = None
    invalid: object = None
    if isinstance(message, AIMessage):
        calls = copy.deepcopy(message.tool_calls)
        invalid = copy.deepcopy(message.invalid_tool_calls)
    return (type(message), content, calls, invalid)


def _matches(message: BaseMessage, snapshot: _Snapshot) -> bool:
    kind, content, calls, invalid = snapshot
    if type(message) is not kind or message.content != content:
        return False
    if isinstance(message, AIMessage):
        return message.tool_calls == calls and message.invalid_tool_calls == invalid
    return True


class IdCachedCounter:
    """A :class:`~ctxfs.tokens.TokenCounter` that also remembers counts by message id.

    Args:
        inner: The counter that does the counting (its own caches still apply).
        max_entries: Most ids remembered; the oldest are forgotten first.
    """

    def __init__(self, inner: TokenCounter, *, max_entries: int = 200_000) -> None:
        self._inner = inner
        self._max = max_entries
        self._by_id: dict[str, tuple[_Snapshot, int]] = {}
        bound = getattr(inner, "upper_bound", None)
        if bound is not None:
            # The engine looks this up to skip tokenizing small texts.
            self.upper_bound = bound

    def count_text(self, text: str) -> int:
        """Returns what the inner counter says."""
        return self._inner.count_text(text)

    def count_message(self, message: BaseMessage) -> int:
        """Returns the message's tokens, from the id cache when its content is unchanged."""
        key = message.id
        if key is None:
            return self._inner.count_message(message)
        entry = self._by_id.get(key)
        if entry is not None and _matches(message, entry[0]):
            return entry[1]
        tokens = self._inner.count_message(message)
        if len(self._by_id) >= self._max:
            del self._by_id[next(iter(self._by_id))]
        self._by_id[key] = (_snapshot(message), tokens)
        return tokens

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Returns the total of :meth:`count_message`."""
        return sum(self.count_message(message) for message in messages)
