"""What ctxfs reads off a langchain message: its text, its tool calls and their results.

One home for the small questions every step asks of a message, so that they get one answer:

- :func:`text_blocks` / :func:`message_text`: the text of a content (a string, or the ``str``
  and ``{"type": "text"}`` blocks of a list; images and other blocks carry no text).
- :func:`offloadable_text`: the text a step may move to a file, or ``None`` when moving it
  would lose something (non-text blocks, extra keys on a block, NUL characters, a lone
  surrogate no file can hold).
- :func:`saved_text` / :func:`text_layout` / :func:`restore_text`: the text a tool result is
  saved as, and how its content is laid out again from it, byte-exact, for every content of
  text blocks (extra keys such as ``id``, ``cache_control`` or ``annotations`` included, NUL
  characters and lone surrogates shown as stand-ins) and any other block as its JSON;
  :func:`why_not_saved` says why a content JSON cannot give back identical is not saved.
- :func:`pair_results`: which tool call each tool result answers.
- :func:`same_objects`: whether two lists hold the very same message objects (in C: it runs
  on every model call, over the whole history).
- :func:`target_path_of`: the file a write/edit call acted on.
- :func:`replace_tool_arg`: a copy of an AI message with one argument of one call replaced,
  kept consistent in the provider-format copies of the call.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import is_
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

__all__ = [
    "LONE_STAND_IN_BASES",
    "NUL_STAND_INS",
    "LayoutEntry",
    "Pairing",
    "malformed_content",
    "message_text",
    "offloadable_text",
    "pair_results",
    "replace_tool_arg",
    "restore_text",
    "same_objects",
    "saved_text",
    "target_path_of",
    "text_blocks",
    "text_layout",
    "why_not_saved",
]

Content = str | list[str | dict[Any, Any]]

LayoutEntry = tuple[str, int] | tuple[str, int, str]
"""One entry of a saved text's layout (see :func:`text_layout`)."""

NUL_STAND_INS = "\u2400" + "".join(chr(c) for c in range(0xE000, 0xF900))
"""Characters that may stand for NUL in a saved text, in order of preference: the first
one the text does not hold is used (SYMBOL FOR NUL, then the private use area)."""

_SURROGATES = 0x800  # U+D800 to U+DFFF

LONE_STAND_IN_BASES = tuple(range(0xF0000, 0x110000, _SURROGATES))
"""Where the characters standing for lone surrogates in a saved text may start, in order of
preference (the supplementary private use areas, planes 15 and 16): the surrogate U+D800 + k
is saved as the base + k, with the first base none of whose characters the text holds.
UTF-8 cannot hold a lone surrogate (a tool decoding bytes with ``surrogateescape`` returns
them), so without a stand-in such a result could never leave the context."""


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
    binary, so the agent could not read them back. So does text no file can hold
    (:func:`_storable`).
    """
    if isinstance(content, str):
        return None if "\x00" in content or not _storable(content) else content
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
    return None if "\x00" in text or not _storable(text) else text


_SURROGATE = re.compile("[\ud800-\udfff]")


def _storable(text: str) -> bool:
    """Whether a file can hold ``text``: it holds no lone surrogate, which UTF-8 cannot
    encode (such text stays in the message, where it is kept as it is)."""
    return _surrogate_at(text) is None


def _surrogate_at(text: str) -> int | None:
    """Where ``text``'s first lone surrogate is, or ``None``."""
    found = None if text.isascii() else _SURROGATE.search(text)
    return None if found is None else found.start()


def _saved(content: Content) -> tuple[str, tuple[LayoutEntry, ...]] | str:
    """The saved text and layout of a content, or why it has none."""
    parts: list[str] = []
    layout: list[LayoutEntry] = []
    if isinstance(content, str):
        parts.append(content)
    else:
        for number, block in enumerate(content, 1):
            if isinstance(block, str):
                parts.append(block)
                layout.append(("str", len(block)))
                continue
            if not isinstance(block, dict):
                return f"block {number} is a {type(block).__name__}, neither text nor a block"
            if block.get("type") != "text" or not isinstance(block.get("text"), str):
                # any other block (an image by URL, a json or search_result block, reasoning,
                # a kind ctxfs does not know) is saved as its JSON, on lines of its own
                try:
                    piece = f"\n{json.dumps(block, ensure_ascii=False, allow_nan=False)}\n"
                except (TypeError, ValueError) as exc:
                    return f"block {number} has keys JSON cannot hold ({exc})"
                parts.append(piece)
                layout.append(("json", len(piece)))
                continue
            parts.append(block["text"])
            if set(block) == {"type", "text"}:
                layout.append(("text", len(block["text"])))
                continue
            try:  # the other keys, in order, with the text's place kept
                rest = json.dumps({**block, "text": None}, ensure_ascii=True, allow_nan=False)
            except (TypeError, ValueError) as exc:
                return f"block {number} has keys JSON cannot hold ({exc})"
            layout.append(("text", len(block["text"]), rest))
    text = "".join(parts)
    if _surrogate_at(text) is not None:
        base = next((b for b in LONE_STAND_IN_BASES if not _holds_range(text, b)), None)
        if base is None:
            return (
                "its text holds lone surrogates and characters of every range that could "
                "stand for them"
            )
        text = _lone_swapped(text, base, back=False)
        layout.insert(0, ("lone", base))
    if "\x00" in text:
        stand_in = next((c for c in NUL_STAND_INS if c not in text), None)
        if stand_in is None:
            return "its text holds NUL characters and every character that could stand for them"
        text = text.replace("\x00", stand_in)
        layout.insert(0, ("nul", ord(stand_in)))
    if restore_text(text, tuple(layout)) != content:
        return "its blocks do not come back identical from JSON (tuples, non-string keys...)"
    return text, tuple(layout)


def _stand_ins(base: int) -> re.Pattern[str]:
    return re.compile(f"[{chr(base)}-{chr(base + _SURROGATES - 1)}]")


def _holds_range(text: str, base: int) -> bool:
    return _stand_ins(base).search(text) is not None


def _lone_swapped(text: str, base: int, *, back: bool) -> str:
    """``text`` with each lone surrogate as its stand-in from ``base`` on, or ``back``."""
    if back:
        return _stand_ins(base).sub(lambda c: chr(0xD800 + ord(c.group()) - base), text)
    return _SURROGATE.sub(lambda c: chr(base + ord(c.group()) - 0xD800), text)


def saved_text(content: Content) -> str | None:
    """Returns the text a tool result's content is saved as, or ``None`` if it cannot be.

    Every content made of text is saved: a string, or a list of ``str`` and
    ``{"type": "text", "text": ...}`` blocks, whatever other keys the blocks carry (an
    ``id``, ``cache_control``, ``annotations``...). The text is the blocks' concatenation,
    with NUL characters (which would make the file binary, unreadable to the agent's tools)
    replaced by a character the text does not hold, and lone surrogates (which UTF-8 cannot
    store) by characters of a private use range it does not hold
    (:data:`LONE_STAND_IN_BASES`); :func:`text_layout` records which, and the blocks' other
    keys, so that :func:`restore_text` gives back the content exactly. Any other block (an
    image by URL, a ``json`` or ``search_result`` block, reasoning, a kind ctxfs does not
    know) is saved as its JSON on lines of its own, and read back from it. A content whose
    blocks JSON cannot give back identical (tuples, non-string keys...) is not saved:
    :func:`why_not_saved` says why.

    Example:
        >>> content = [{"type": "text", "text": "a\\x00b", "id": "lc_1"}]
        >>> text = saved_text(content)
        >>> text
        'a␀b'
        >>> restore_text(text, text_layout(content)) == content
        True
    """
    found = _saved(content)
    return None if isinstance(found, str) else found[0]


def text_layout(content: Content) -> tuple[LayoutEntry, ...]:
    """Returns how ``content`` is laid out from its :func:`saved_text`.

    Entries, in order: ``("nul", code point)`` first when a character stands for NUL, and
    ``("lone", base)`` first when characters from ``base`` on stand for lone surrogates; then,
    for a list content, one per block: ``("str", characters)``, ``("text", characters)``,
    ``("text", characters, JSON of the block's keys with its text as null)``, or
    ``("json", characters)`` for any other block, saved as its JSON. Empty for a
    plain string (or a content that cannot be saved).
    """
    found = _saved(content)
    return () if isinstance(found, str) else found[1]


def why_not_saved(content: Content) -> str | None:
    """Returns why :func:`saved_text` cannot save ``content``, or ``None`` if it can."""
    found = _saved(content)
    return found if isinstance(found, str) else None


def restore_text(text: str, layout: Sequence[Sequence[object]]) -> Content:
    """Returns the content that :func:`saved_text` saved as ``text`` with ``layout``."""
    for entry in layout:
        if entry[0] == "nul" and isinstance(entry[1], int):
            text = text.replace(chr(entry[1]), "\x00")
        elif entry[0] == "lone" and entry[1] in LONE_STAND_IN_BASES:
            text = _lone_swapped(text, entry[1], back=True)
    blocks: list[str | dict[Any, Any]] = []
    at = 0
    is_list = False
    for entry in layout:
        kind, size = entry[0], entry[1]
        if kind in ("nul", "lone") or not isinstance(size, int):
            continue
        is_list = True
        piece = text[at : at + size]
        at += size
        if kind == "str":
            blocks.append(piece)
        elif kind == "json":
            blocks.append(json.loads(piece))
        elif len(entry) > 2 and isinstance(entry[2], str):
            blocks.append({**json.loads(entry[2]), "text": piece})
        else:
            blocks.append({"type": "text", "text": piece})
    return blocks if is_list else text


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


def malformed_content(messages: Sequence[object]) -> str | None:
    """What is wrong with the first message whose content LangChain's own constructors would
    have refused (``model_construct`` skips them): neither a string nor a list of strings and
    block dicts. ``None`` when every message is well formed."""
    for index, message in enumerate(messages):
        if not isinstance(message, BaseMessage):
            return f"messages[{index}] is a {type(message).__name__}, not a LangChain message"
        content = message.content
        if isinstance(content, str):
            continue
        if not isinstance(content, list):
            odd: str | None = f"of type {type(content).__name__}"
        else:
            odd = next(
                (
                    f"that is a list holding a {type(block).__name__}"
                    for block in content
                    if not isinstance(block, str | dict)
                ),
                None,
            )
        if odd is not None:
            return (
                f"messages[{index}] ({message.type}, id {message.id!r}) has content {odd}; "
                "a message's content is a string or a list of strings and block dicts"
            )
    return None


def same_objects(a: Sequence[object], b: Sequence[object]) -> bool:
    """Whether ``a`` and ``b`` hold the very same objects, in the same order."""
    return len(a) == len(b) and all(map(is_, a, b))


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
            except (ValueError, RecursionError):  # not JSON, a 5,000-digit number, too deep
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
