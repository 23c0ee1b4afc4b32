"""What ctxfs reads off a langchain message: its text, its tool calls and their results.

One home for the small questions every step asks of a message, so that they get one answer:

- :func:`text_blocks` / :func:`message_text`: the text of a content (a string, or the ``str``
  and ``{"type": "text"}`` blocks of a list; images and other blocks carry no text).
- :func:`offloadable_text`: the text a step may move to a file, or ``None`` when moving it
  would lose something (non-text blocks, extra keys on a block, NUL characters).
- :func:`pair_results`: which tool call each tool result answers.
- :func:`target_path_of`: the file a write/edit call acted on.
- :func:`replace_tool_arg`: a copy of an AI message with one argument of one call replaced,
  kept consistent in the provider-format copies of the call.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

__all__ = [
    "Pairing",
    "message_text",
    "offloadable_text",
    "pair_results",
    "replace_tool_arg",
    "target_path_of",
    "text_blocks",
]

Content = str | list[str | dict[Any, Any]]


def text_blocks(content: Content) -> list[str]:
    """Returns the text pieces of a message content, in order.

    A string content is one piece; a list contributes each ``str`` block and the ``text`` of
    each ``{"type": "text", "text": ...}`` block. Other blocks (images, tool use...) have none.
    """
    if isinstance(content, str):
        return [content]
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            parts.append(block["text"])
    return parts


def message_text(message: BaseMessage) -> str:
    """Returns the text of a message's content (tool calls excluded), pieces joined."""
    return "".join(text_blocks(message.content))


def offloadable_text(content: Content) -> str | None:
    """Returns the text to move out of a message content, or ``None`` to leave it.

    A string is moved as is. A list of blocks is moved only when every block is pure text
    (a ``str`` or a ``{"type": "text", "text": ...}`` dict with no other keys); the file then
    holds the blocks' concatenation. Lists with images, citations or other blocks stay inline.
    Text containing NUL characters stays inline too: the workspace treats such files as
    binary, so the agent could not read them back.
    """
    if isinstance(content, str):
        return None if "\x00" in content else content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif set(block) == {"type", "text"} and block["type"] == "text":
            if not isinstance(block["text"], str):
                return None
            parts.append(block["text"])
        else:
            return None
    text = "".join(parts)
    return None if "\x00" in text else text


@dataclass(frozen=True, slots=True)
class Pairing:
    """Which call each tool result answers, and which calls no result answers.

    Attributes:
        calls: Index of each answered tool result -> (index of its AI message, the call).
        unanswered: (index of the AI message, call id) of every call without a result.
        orphans: Indices of tool results that answer no call.
    """

    calls: Mapping[int, tuple[int, Mapping[str, Any]]]
    unanswered: tuple[tuple[int, str], ...]
    orphans: tuple[int, ...]


def pair_results(messages: Sequence[BaseMessage], start: int = 0) -> Pairing:
    """Pairs every tool result from ``start`` on with the call it answers.

    A result answers the earliest still-open call with its id, so duplicate ids pair in
    order and results may interleave across AI messages.
    """
    pending: dict[str, deque[tuple[int, Mapping[str, Any]]]] = {}
    calls: dict[int, tuple[int, Mapping[str, Any]]] = {}
    orphans: list[int] = []
    for i in range(start, len(messages)):
        message = messages[i]
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                pending.setdefault(call.get("id") or "", deque()).append((i, call))
        elif isinstance(message, ToolMessage):
            queue = pending.get(message.tool_call_id)
            if queue:
                calls[i] = queue.popleft()
            else:
                orphans.append(i)
    unanswered = sorted(
        (owner, call_id) for call_id, queue in pending.items() for owner, _ in queue
    )
    return Pairing(calls, tuple(unanswered), tuple(orphans))


def target_path_of(args: Mapping[str, Any]) -> str | None:
    """Returns the file a write/edit tool call acted on: its ``file_path`` or ``path`` arg."""
    for key in ("file_path", "path"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def replace_tool_arg(
    message: AIMessage, index: int, arg: str, value: str, *, kwargs: Mapping[str, Any]
) -> AIMessage:
    """Returns a copy of ``message`` whose ``tool_calls[index]`` has ``arg`` set to ``value``.

    The input is not mutated. Provider-format copies of the same call are kept consistent when
    the call's id is unique in the message: an OpenAI ``additional_kwargs["tool_calls"]`` entry
    (its JSON ``arguments`` re-serialized) and an Anthropic ``tool_use`` content block (its
    ``input``). Message id, name and metadata are preserved; ``kwargs`` becomes the copy's
    ``additional_kwargs`` before the OpenAI entry is updated in it.
    """
    calls = [dict(call) for call in message.tool_calls]
    calls[index]["args"] = {**message.tool_calls[index]["args"], arg: value}
    update: dict[str, Any] = {"tool_calls": calls, "additional_kwargs": dict(kwargs)}
    call_id = message.tool_calls[index]["id"]
    same_id = [c for c in message.tool_calls if c.get("id") == call_id]
    if call_id is not None and len(same_id) == 1:
        openai = _replace_in_openai_calls(update["additional_kwargs"], call_id, arg, value)
        if openai is not None:
            update["additional_kwargs"] = openai
        content = _replace_in_tool_use_blocks(message.content, call_id, arg, value)
        if content is not None:
            update["content"] = content
    return message.model_copy(update=update)


def _replace_in_openai_calls(
    kwargs: dict[str, Any], call_id: str, arg: str, value: str
) -> dict[str, Any] | None:
    raw_calls = kwargs.get("tool_calls")
    if not isinstance(raw_calls, list):
        return None
    new_calls: list[Any] = []
    changed = False
    for raw in raw_calls:
        function = raw.get("function") if isinstance(raw, dict) else None
        if isinstance(function, dict) and raw.get("id") == call_id:
            try:
                parsed = json.loads(function.get("arguments") or "{}")
            except ValueError:
                parsed = None
            if isinstance(parsed, dict) and arg in parsed:
                parsed[arg] = value
                arguments = json.dumps(parsed, ensure_ascii=False)
                raw = {**raw, "function": {**function, "arguments": arguments}}
                changed = True
        new_calls.append(raw)
    return {**kwargs, "tool_calls": new_calls} if changed else None


def _replace_in_tool_use_blocks(
    content: Content, call_id: str, arg: str, value: str
) -> list[str | dict[Any, Any]] | None:
    if isinstance(content, str):
        return None
    new_blocks: list[str | dict[Any, Any]] = []
    changed = False
    for block in content:
        if (
            isinstance(block, dict)
            and block.get("type") == "tool_use"
            and block.get("id") == call_id
            and isinstance(block.get("input"), dict)
            and arg in block["input"]
        ):
            block = {**block, "input": {**block["input"], arg: value}}
            changed = True
        new_blocks.append(block)
    return new_blocks if changed else None
