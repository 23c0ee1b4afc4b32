"""Prompt caching: how much of a request a provider's prefix cache would reuse.

Providers cache the longest prefix a request shares with an earlier one: the shared part is
read from the cache at about a tenth of the input price, everything from the first
difference on is paid in full again. A compaction that edits an old message therefore gives
up the cached tokens from that message on. These are measured per message: a message counts
as shared when it is the very same message (same object, or equal type, content, tool
calls and call id), so the figures are a lower bound on what a provider, which compares
tokens, would reuse.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import compress, count
from operator import is_not

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

__all__ = ["same_message", "shared_prefix"]


def same_message(a: BaseMessage, b: BaseMessage) -> bool:
    """Whether two messages would be sent as the same bytes."""
    if a is b:
        return True
    if type(a) is not type(b) or a.content != b.content:
        return False
    if isinstance(a, AIMessage) and isinstance(b, AIMessage):
        return a.tool_calls == b.tool_calls
    if isinstance(a, ToolMessage) and isinstance(b, ToolMessage):
        return a.tool_call_id == b.tool_call_id
    return True


def shared_prefix(previous: Sequence[BaseMessage], current: Sequence[BaseMessage]) -> int:
    """How many leading messages ``current`` shares with ``previous``."""
    # The very same objects first, in C (no Python-level work per message): a history
    # usually shares a long run of them with the last request.
    end = min(len(previous), len(current))
    shared = next(compress(count(), map(is_not, previous, current)), end)
    for a, b in zip(previous[shared:end], current[shared:end], strict=True):
        if not same_message(a, b):
            break
        shared += 1
    return shared
