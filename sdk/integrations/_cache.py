"""Provider prompt-cache controls on the requests ctxfs sends (``ContextMiddleware``'s
``prompt_cache``).

Providers cache a request by its exact prefix. ctxfs rewrites old messages only when a
compaction fires, so between two compactions every request starts with the previous one;
these controls tell the provider so:

- ``"openai"``: the request carries ``prompt_cache_key``, the thread id, so that requests of
  one conversation are routed to the same cache (OpenAI groups requests by that key and the
  prefix; without it, conversations with the same system prompt and tools share one route).
- ``"anthropic"``: ``cache_control`` breakpoints (``{"type": "ephemeral"}``) on two
  messages: the last one of the request (the whole request is read back by the next one,
  which only appends to it) and the last one a compaction wrote (a summary, a cleared
  result, a moved tool input). Past that point nothing changes until a compaction rewrites
  something after it, so a compaction that only clears newer results still reads the
  prefix up to there from the cache, however many messages came since (Anthropic looks for
  a cached prefix only a few blocks back from a breakpoint).

Only the request is marked: the graph state, and so the checkpoint, keep the messages as
they are. A message without content of its own (an assistant turn that only calls tools)
cannot hold a breakpoint; the one before it takes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import BaseMessage

from ctxfs._pointers._pointer import input_pointers, result_pointer
from ctxfs._summary._message import is_summary

PromptCache = Literal["anthropic", "openai"]
"""Which provider's cache controls a request carries."""

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
"""Anthropic's breakpoint: cache the prefix up to and including this block."""

_MARKABLE = frozenset({"text", "image", "document", "tool_result"})
"""Content block types a breakpoint may be put on."""


def compaction_end(messages: Sequence[BaseMessage]) -> int | None:
    """The index of the last message a compaction wrote, or ``None`` if none did."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if is_summary(message) or input_pointers(message):
            return i
        pointer = result_pointer(message)
        if pointer is not None and pointer.kind in ("cleared", "reread"):
            return i
    return None


def _marked(message: BaseMessage) -> BaseMessage | None:
    """The message with a breakpoint on its last content block, or ``None`` if it has none."""
    content = message.content
    if isinstance(content, str):
        if not content:
            return None
        block: dict[str, Any] = {"type": "text", "text": content, "cache_control": EPHEMERAL}
        return message.model_copy(update={"content": [block]})
    if not content or not isinstance(content[-1], dict):
        return None
    last = content[-1]
    if last.get("type") not in _MARKABLE or (last.get("type") == "text" and not last.get("text")):
        return None
    return message.model_copy(
        update={"content": [*content[:-1], {**last, "cache_control": EPHEMERAL}]}
    )


def with_breakpoints(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The messages with Anthropic breakpoints at the end and where compaction last wrote."""
    out = list(messages)
    wanted = {len(out) - 1}
    end = compaction_end(out)
    if end is not None:
        wanted.add(end)
    for start in sorted(wanted, reverse=True):
        for i in range(start, -1, -1):  # the nearest message that can hold one
            marked = _marked(out[i])
            if marked is not None:
                out[i] = marked
                break
    return out


def cache_controls(
    messages: Sequence[BaseMessage], thread_id: str, provider: PromptCache
) -> tuple[list[BaseMessage], dict[str, Any]]:
    """The messages to send and the model settings to add, for ``provider``'s cache."""
    if provider == "openai":
        return list(messages), {"prompt_cache_key": thread_id}
    return with_breakpoints(messages), {}
