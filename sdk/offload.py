"""The pure parts of offloading: file names, pointer texts, and message surgery.

Nothing here touches a workspace; :mod:`ctxfs.engine` does the writing.

File names are deterministic and collision-free per thread::

    /tool_results/<thread>/<call>.<ext>
    /tool_inputs/<thread>/<call>__<arg>.<ext>

where ``<thread>`` and ``<call>`` are :func:`safe_name` of the raw ids (a sanitized, truncated
prefix plus 16 hex digits of the SHA-256 of the raw id, so empty ids, ids equal after
sanitizing and very long ids never share a name) and ``<ext>`` is ``json`` when the text parses
as a JSON object or array, ``txt`` otherwise. If a name is taken by different content,
:func:`candidate_paths` yields the next names (``<call>.2.<ext>``, ...), in a fixed order.

Pointers start with a tag (:data:`RESULT_TAG`, :data:`INPUT_TAG`, :data:`CLEARED_TAG`) so
ctxfs recognises its own pointers and never offloads them again.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from langchain_core.messages import AIMessage

from ctxfs.layout import INPUTS_DIR, RESULTS_DIR

__all__ = [
    "CLEARED_TAG",
    "INPUT_TAG",
    "RESULT_TAG",
    "brief_call",
    "candidate_paths",
    "cleared_pointer",
    "count_lines",
    "head_line",
    "input_path",
    "input_pointer",
    "is_cleared",
    "is_json_text",
    "is_pointer",
    "offloadable_text",
    "pointer_path",
    "replace_tool_arg",
    "reread_path",
    "reread_pointer",
    "result_path",
    "result_pointer",
    "result_pointer_stats",
    "safe_name",
    "target_path_of",
]

RESULT_TAG = "[ctxfs: tool result offloaded]"
"""First line of every tool-result pointer."""

INPUT_TAG = "[ctxfs: tool input offloaded]"
"""Start of every tool-input pointer."""

CLEARED_TAG = "[ctxfs: tool result cleared]"
"""Start of every pointer that replaced an old tool result when it was cleared."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_PLAIN_ARG = re.compile(r"[A-Za-z0-9_]{1,64}")
_RESULT_PATH = re.compile(
    re.escape(RESULT_TAG)
    + r"\nThe full result was saved to ("
    + re.escape(RESULTS_DIR)
    + r"/\S+) \("
)
_INPUT_PATH = re.compile(
    re.escape(INPUT_TAG) + r" .*? saved byte-exact to (" + re.escape(INPUTS_DIR) + r"/\S+) \(",
    re.DOTALL,
)
_CLEARED_PATH = re.compile(
    re.escape(CLEARED_TAG) + r" Saved to (" + re.escape(RESULTS_DIR) + r"/\S+) \("
)
_REREAD_PATH = re.compile(re.escape(CLEARED_TAG) + r" Showed saved content from (/\S+) \(")
_STATS = re.compile(r" \(([\d,]+) lines, ([\d,]+) characters, ([\d,]+) tokens\)")
_OTHER_SPACE = re.compile(r"[^\S ]")
_HASH_HEX = 16


def safe_name(raw: str, *, max_len: int = 40) -> str:
    """Returns a file-name-safe, collision-free rendering of an id.

    Characters outside ``[A-Za-z0-9._-]`` become ``_``, leading dots are removed, the result
    is cut to ``max_len`` characters, and ``-`` plus 16 hex digits of the SHA-256 of the raw id
    is always appended.

    Example:
        >>> safe_name("call/1")
        'call_1-8d7aebde39d4b3e4'
    """
    clean = _UNSAFE.sub("_", raw).lstrip(".")[:max_len]
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_HEX]
    return f"{clean}-{digest}" if clean else digest


def _arg_name(arg: str) -> str:
    return arg if _PLAIN_ARG.fullmatch(arg) else safe_name(arg, max_len=24)


def is_json_text(text: str) -> bool:
    """Returns whether ``text`` is a JSON object or array (surrounding whitespace allowed)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return False
    try:
        value = json.loads(stripped)
    except ValueError:
        return False
    return isinstance(value, dict | list)


def _extension(text: str) -> str:
    return "json" if is_json_text(text) else "txt"


def result_path(thread_id: str, tool_call_id: str, text: str) -> str:
    """Returns the first-choice path for the full text of a tool result."""
    return f"{RESULTS_DIR}/{safe_name(thread_id)}/{safe_name(tool_call_id)}.{_extension(text)}"


def input_path(thread_id: str, tool_call_id: str, arg: str, text: str) -> str:
    """Returns the first-choice path for one argument of a tool call."""
    stem = f"{safe_name(tool_call_id)}__{_arg_name(arg)}"
    return f"{INPUTS_DIR}/{safe_name(thread_id)}/{stem}.{_extension(text)}"


def candidate_paths(path: str, *, limit: int = 64) -> Iterator[str]:
    """Yields ``path`` and then its deterministic alternatives: ``a.2.txt``, ``a.3.txt``, ...

    Used when a name is taken by different content: the engine never overwrites.
    """
    yield path
    stem, dot, ext = path.rpartition(".")
    for n in range(2, limit + 1):
        yield f"{stem}.{n}.{ext}" if dot else f"{path}.{n}"


def count_lines(text: str) -> int:
    """Returns the number of lines, counting a last line without a newline; 0 for ``""``."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _clip(line: str, width: int) -> str:
    if len(line) <= width:
        return line
    return f"{line[:width]}… [{len(line) - width:,} more characters]"


def result_pointer(
    path: str, text: str, *, tokens: int, preview_lines: int, preview_line_chars: int
) -> str:
    """Returns the message that replaces a large tool result.

    Args:
        path: Where the full text was saved.
        text: The full text.
        tokens: Its token count.
        preview_lines: How many first lines to show.
        preview_line_chars: Where to clip each preview line.

    Returns:
        A tag line, the path and size, a preview, and how to read more.
    """
    lines = count_lines(text)
    out = [
        RESULT_TAG,
        f"The full result was saved to {path} ({lines:,} lines, {len(text):,} characters, "
        f"{tokens:,} tokens). It was too large to keep in the conversation.",
    ]
    shown = min(preview_lines, lines)
    if shown:
        head = text.split("\n", shown)[:shown]
        out.append(f"Preview, lines 1-{shown} of {lines:,} (long lines clipped):")
        out.extend(_clip(line, preview_line_chars) for line in head)
        out.append("[end of preview]")
    out.append(
        f"To see more, call read_file on {path} with offset and limit (offset={shown} continues "
        "after the preview), or search it with grep."
    )
    return "\n".join(out)


def input_pointer(
    path: str, *, tool_name: str, arg: str, chars: int, tokens: int, target_path: str | None
) -> str:
    """Returns the string that replaces an offloaded tool-call argument.

    Args:
        path: Where the byte-exact copy was saved.
        tool_name: The tool that was called.
        arg: The argument's name.
        chars: Characters in the argument.
        tokens: Tokens in the argument.
        target_path: The file the tool wrote, if known.

    Returns:
        One line naming the saved copy and the target file.
    """
    target = f" The tool applied it to {target_path}." if target_path else ""
    return (
        f"{INPUT_TAG} The {arg} argument of this {tool_name} call was saved byte-exact to "
        f"{path} ({chars:,} characters, {tokens:,} tokens).{target} Use read_file on {path} "
        "to see it."
    )


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else f"{text[:width]}…"


def _one_line(text: str, width: int) -> str:
    return _cut(_OTHER_SPACE.sub(" ", text), width)


def head_line(text: str, *, width: int = 80) -> str:
    """Returns the first non-blank line of ``text``, on one line and clipped to ``width``."""
    for line in text.splitlines():
        if line.strip():
            return _one_line(line.strip(), width)
    return "(empty)"


def brief_call(
    name: str | None,
    args: Mapping[str, Any] | None,
    *,
    width: int = 100,
    value_width: int = 50,
) -> str:
    """Returns a tool call in brief, on one line: ``bash(command="ls -la")``.

    Each argument value is shown as JSON clipped to ``value_width`` characters, the whole to
    ``width``. ``args=None`` (the call is not in the history) gives ``name(?)``.
    """
    if args is None:
        return f"{name or 'tool'}(?)"
    shown = []
    for key, value in args.items():
        rendered = json.dumps(value, ensure_ascii=False, default=str)
        shown.append(f"{key}={_cut(rendered, value_width)}")
    return _one_line(f"{name or 'tool'}({', '.join(shown)})", width)


def cleared_pointer(path: str, text: str, *, tokens: int, call: str) -> str:
    """Returns the short pointer that replaces an old tool result whose full text is saved.

    Args:
        path: Where the full text is (a file under ``/tool_results``).
        text: The full text.
        tokens: Its token count.
        call: The call in brief (:func:`brief_call`).
    """
    return (
        f"{CLEARED_TAG} Saved to {path} ({count_lines(text):,} lines, {len(text):,} characters, "
        f"{tokens:,} tokens); read_file or grep it.\n"
        f"Call: {call}\n"
        f"Head: {head_line(text)}"
    )


def reread_pointer(path: str, text: str, *, tokens: int, call: str) -> str:
    """Returns the pointer that replaces a recovery tool's view of content ctxfs saved.

    Nothing is saved for such a result: it showed a file (or a folder) of the SDK's areas,
    which are never rewritten, so repeating the call shows it again.

    Args:
        path: The saved file or folder the result showed.
        text: The result's text.
        tokens: Its token count.
        call: The call in brief (:func:`brief_call`).
    """
    return (
        f"{CLEARED_TAG} Showed saved content from {path} ({count_lines(text):,} lines, "
        f"{len(text):,} characters, {tokens:,} tokens); repeat the call to see it again.\n"
        f"Call: {call}"
    )


def is_cleared(text: str) -> bool:
    """Returns whether ``text`` is a pointer left by clearing (never cleared again)."""
    return text.startswith(CLEARED_TAG)


def reread_path(text: str) -> str | None:
    """Returns the saved path a re-read pointer names, or ``None`` if ``text`` is not one."""
    match = _REREAD_PATH.match(text) if text.startswith(CLEARED_TAG) else None
    return match.group(1) if match else None


def result_pointer_stats(text: str) -> tuple[int, int, int] | None:
    """Returns (lines, characters, tokens) a result pointer gives for its full text."""
    if not text.startswith(RESULT_TAG):
        return None
    match = _STATS.search(text.split("\n", 2)[1] if "\n" in text else "")
    if match is None:
        return None
    lines, chars, tokens = (int(group.replace(",", "")) for group in match.groups())
    return lines, chars, tokens


def is_pointer(text: str) -> bool:
    """Returns whether ``text`` is a pointer ctxfs wrote (result, input or cleared)."""
    return pointer_path(text) is not None or reread_path(text) is not None


def pointer_path(text: str) -> str | None:
    """Returns the path of the byte-exact copy a ctxfs pointer names, else ``None``.

    Result, input and cleared-result pointers name such a copy. A re-read pointer (see
    :func:`reread_pointer`) does not, and gives ``None`` here: see :func:`reread_path`.
    """
    if text.startswith(RESULT_TAG):
        match = _RESULT_PATH.match(text)
    elif text.startswith(INPUT_TAG):
        match = _INPUT_PATH.match(text)
    elif text.startswith(CLEARED_TAG):
        match = _CLEARED_PATH.match(text)
    else:
        return None
    return match.group(1) if match else None


def offloadable_text(content: str | list[str | dict[Any, Any]]) -> str | None:
    """Returns the text to offload from a message content, or ``None`` to leave it.

    A string is offloaded as is. A list of blocks is offloaded only when every block is pure
    text (a ``str`` or a ``{"type": "text", "text": ...}`` dict with no other keys); the file
    then holds the blocks' concatenation, which is ``message.text``. Lists with images,
    citations or other blocks stay inline. Text containing NUL characters stays inline too:
    the workspace treats such files as binary, so the agent could not read them back.
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


def target_path_of(args: Mapping[str, Any]) -> str | None:
    """Returns the file a write/edit tool call acted on: its ``file_path`` or ``path`` arg."""
    for key in ("file_path", "path"):
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def replace_tool_arg(message: AIMessage, index: int, arg: str, pointer: str) -> AIMessage:
    """Returns a copy of ``message`` whose ``tool_calls[index]`` has ``arg`` set to ``pointer``.

    The input is not mutated. Provider-format copies of the same call are kept consistent when
    the call's id is unique in the message: an OpenAI ``additional_kwargs["tool_calls"]`` entry
    (its JSON ``arguments`` re-serialized) and an Anthropic ``tool_use`` content block (its
    ``input``). Message id, name and metadata are preserved.
    """
    calls = [dict(call) for call in message.tool_calls]
    calls[index]["args"] = {**message.tool_calls[index]["args"], arg: pointer}
    update: dict[str, Any] = {"tool_calls": calls}
    call_id = message.tool_calls[index]["id"]
    same_id = [c for c in message.tool_calls if c.get("id") == call_id]
    if call_id is not None and len(same_id) == 1:
        kwargs = _replace_in_openai_calls(message.additional_kwargs, call_id, arg, pointer)
        if kwargs is not None:
            update["additional_kwargs"] = kwargs
        content = _replace_in_tool_use_blocks(message.content, call_id, arg, pointer)
        if content is not None:
            update["content"] = content
    return message.model_copy(update=update)


def _replace_in_openai_calls(
    kwargs: dict[str, Any], call_id: str, arg: str, pointer: str
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
                parsed[arg] = pointer
                arguments = json.dumps(parsed, ensure_ascii=False)
                raw = {**raw, "function": {**function, "arguments": arguments}}
                changed = True
        new_calls.append(raw)
    return {**kwargs, "tool_calls": new_calls} if changed else None


def _replace_in_tool_use_blocks(
    content: str | list[str | dict[Any, Any]], call_id: str, arg: str, pointer: str
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
            block = {**block, "input": {**block["input"], arg: pointer}}
            changed = True
        new_blocks.append(block)
    return new_blocks if changed else None
